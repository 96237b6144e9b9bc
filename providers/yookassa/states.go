package yookassa

import (
	"fmt"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// The functions of this file decide what a YooKassa object says about an
// operation. Classify and Lookup both call them, so that a payment or
// refund means the same thing whether it came back as the answer to a send
// or was read by a lookup. Each returns an adapterkit.State: one verdict
// that State.Outcome (Classify) and State.Result (Lookup) both convert.

// chargeState maps the payment a charge created. A payment canceled after
// authorization (canceled_by_merchant, expired_on_capture: see the reasons
// in wire.go) succeeded as a charge: the money was held, and what became of
// the hold is a cancel's business (docs/ADAPTERS.md, Lookup rule 7). Any
// other canceled payment is a decline.
func (p *Provider) chargeState(pm payment) adapterkit.State {
	switch {
	case pm.Status == statusSucceeded, pm.Status == statusWaitingForCapture:
		return adapterkit.State{Verdict: adapterkit.VerdictSucceeded}
	case authorizedThenReleased(pm):
		return adapterkit.State{Verdict: adapterkit.VerdictSucceeded}
	case pm.Status == statusPending:
		// Created, not finished (the bank has not answered, or the payment
		// waits for a confirmation that a server-side charge cannot give
		// and will expire into canceled).
		return adapterkit.State{Verdict: adapterkit.VerdictProcessing}
	case pm.Status == statusCanceled:
		return p.canceled(codeCanceled, "payment canceled", pm.CancellationDetails)
	}
	return adapterkit.State{Verdict: adapterkit.VerdictUnknown, Message: "payment status " + quote(p.scrub(pm.Status))}
}

// authorizedThenReleased reports a canceled payment that had been
// authorized: the merchant canceled it or its capture period expired.
func authorizedThenReleased(pm payment) bool {
	cd := pm.CancellationDetails
	return pm.Status == statusCanceled && cd != nil &&
		(cd.Reason == reasonCanceledByMerchant || cd.Reason == reasonExpiredOnCapture)
}

// captureState maps the payment a capture acted on.
func (p *Provider) captureState(pm payment) adapterkit.State {
	switch pm.Status {
	case statusSucceeded:
		return adapterkit.State{Verdict: adapterkit.VerdictSucceeded}
	case statusWaitingForCapture, statusPending:
		// Not captured (yet): a resend with the same key completes it (or
		// is refused, for a payment still pending).
		return adapterkit.State{Verdict: adapterkit.VerdictNotYet, Message: "captured payment has status " + pm.Status}
	case statusCanceled:
		// The authorization is gone (canceled or expired): nothing to
		// capture, nothing captured.
		return p.canceled(codeCanceled, "payment is canceled", pm.CancellationDetails)
	}
	return adapterkit.State{Verdict: adapterkit.VerdictUnknown, Message: "captured payment has status " + quote(p.scrub(pm.Status))}
}

// cancelState maps the payment a cancel acted on.
func (p *Provider) cancelState(pm payment) adapterkit.State {
	switch pm.Status {
	case statusCanceled:
		return adapterkit.State{Verdict: adapterkit.VerdictSucceeded}
	case statusSucceeded:
		// Captured: a payment that moved money can no longer be canceled.
		return adapterkit.State{Verdict: adapterkit.VerdictFailed, Code: codeUnexpectedStatus, Message: "yookassa: payment is succeeded and can no longer be canceled"}
	case statusWaitingForCapture, statusPending:
		return adapterkit.State{Verdict: adapterkit.VerdictNotYet, Message: "canceled payment has status " + pm.Status}
	}
	return adapterkit.State{Verdict: adapterkit.VerdictUnknown, Message: "canceled payment has status " + quote(p.scrub(pm.Status))}
}

// refundState maps a refund.
func (p *Provider) refundState(rf refund) adapterkit.State {
	switch rf.Status {
	case statusSucceeded:
		return adapterkit.State{Verdict: adapterkit.VerdictSucceeded}
	case statusPending:
		return adapterkit.State{Verdict: adapterkit.VerdictProcessing}
	case statusCanceled:
		return p.canceled(codeRefundCanceled, "refund canceled", rf.CancellationDetails)
	}
	return adapterkit.State{Verdict: adapterkit.VerdictUnknown, Message: "refund status " + quote(p.scrub(rf.Status))}
}

// canceled is the failed state of an object YooKassa canceled: code, the
// reason as the decline code, and the message "yookassa: <what>", ending
// with who canceled it and why when cancellation_details says.
func (p *Provider) canceled(code, what string, cd *cancellationDetails) adapterkit.State {
	s := adapterkit.State{Verdict: adapterkit.VerdictFailed, Code: code, Message: "yookassa: " + what}
	if cd != nil {
		s.Decline = p.scrub(cd.Reason)
		s.Message = p.scrub("yookassa: " + what + " by " + cd.Party + ": " + cd.Reason)
	}
	return s
}

// paymentState is the state of pm for an operation of kind k.
func (p *Provider) paymentState(k payonce.Kind, pm payment) adapterkit.State {
	switch k {
	case payonce.KindCharge:
		return p.chargeState(pm)
	case payonce.KindCapture:
		return p.captureState(pm)
	case payonce.KindCancel:
		return p.cancelState(pm)
	}
	return adapterkit.State{Verdict: adapterkit.VerdictUnknown, Message: "a payment answers a " + quote(string(k))}
}

// ---- does the object belong to this request? ----

// paymentContradiction checks that pm belongs to the operation op of
// request r: for a charge, the payonce_op metadata the adapter wrote, the
// amount (YooKassa's decimal string read in minor units) and the currency;
// for a capture or cancel, that it is the payment r names (PaymentRef) and
// in r's currency. The amount of the payment a capture acted on is not
// compared: YooKassa does not document what amount a partially captured
// payment shows. err means the amount cannot be read.
func paymentContradiction(r payonce.Request, op string, pm payment) (string, error) {
	if r.Kind != payonce.KindCharge {
		if r.PaymentRef != "" && pm.ID != r.PaymentRef {
			return fmt.Sprintf("the provider's object is payment %q, not %q", pm.ID, r.PaymentRef), nil
		}
		return adapterkit.Belongs(payonce.Request{Currency: r.Currency}, "", "", 0, pm.Amount.Currency), nil
	}
	amt, err := parseAmount(pm.Amount)
	if err != nil {
		return "", fmt.Errorf("payment %s: %w", pm.ID, err)
	}
	return adapterkit.Belongs(r, op, pm.Metadata[MetaOperation], amt, pm.Amount.Currency), nil
}

// refundContradiction checks that rf belongs to the operation op of request
// r: a refund of r's payment, marked with op (RefundMarker in its
// description, or payonce_op metadata should YooKassa ever return it), for
// r's amount and currency.
func refundContradiction(r payonce.Request, op string, rf refund) (string, error) {
	if r.PaymentRef != "" && rf.PaymentID != r.PaymentRef {
		return fmt.Sprintf("the provider's refund is of payment %q, not %q", rf.PaymentID, r.PaymentRef), nil
	}
	amt, err := parseAmount(rf.Amount)
	if err != nil {
		return "", fmt.Errorf("refund %s: %w", rf.ID, err)
	}
	gotOp, _ := refundMarks(rf)
	return adapterkit.Belongs(r, op, gotOp, amt, rf.Amount.Currency), nil
}

// refundMarks reads the operation id and key a refund was created for: its
// payonce_op / payonce_key metadata should YooKassa ever return refund
// metadata, else the markers the adapter appends to the description
// ("<caller text> payonce_op:<op>[ payonce_key:<key>]"). The last marker of
// each kind counts: the adapter's are at the end, after whatever the
// caller wrote. A refund marked with an operation but no key was sent at
// generation 0, whose key is the operation id (payonce.SendRequest).
func refundMarks(rf refund) (op, key string) {
	op, key = rf.Metadata[MetaOperation], rf.Metadata[MetaKey]
	fields := strings.Fields(rf.Description)
	for i := len(fields) - 1; i >= 0; i-- {
		f := fields[i]
		switch {
		case op == "" && strings.HasPrefix(f, RefundMarker):
			op = strings.TrimPrefix(f, RefundMarker)
		case key == "" && strings.HasPrefix(f, RefundKeyMarker):
			key = strings.TrimPrefix(f, RefundKeyMarker)
		}
	}
	if key == "" {
		key = op
	}
	return op, key
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

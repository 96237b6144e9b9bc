package mocks

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/payonce/payonce/mocks/internal/stripewire"
)

// This file changes the fake's objects out of band: what happens at Stripe
// without a request of the client under test (another integration, the
// Dashboard, Stripe itself). Audits compare the provider's records with the
// ledger; these are the differences they must find. Nothing here counts as
// a request (Truth.Requests), and objects made here are marked Injected in
// Truth and left out of its per-reference counts.

// StripeIntentSpec describes a PaymentIntent made out of band
// (InjectPaymentIntent).
type StripeIntentSpec struct {
	// Amount (minor units, > 0) and Currency (ISO 4217, any case; stored
	// lower case, as Stripe renders it) are required.
	Amount   int64
	Currency string
	// Status is the PaymentIntent's status: succeeded (the default),
	// requires_capture, processing, requires_payment_method (declined:
	// it gets a failed charge), requires_confirmation, requires_action or
	// canceled.
	Status string
	// Authorized, for Status canceled, says that it was authorized before
	// it was canceled (its charge is paid, and refunded in full); without
	// it, it was canceled before any confirmation. Ignored otherwise.
	Authorized bool
	// CancellationReason, for Status canceled: one of Stripe's reasons;
	// defaults to "requested_by_customer".
	CancellationReason string
	// Metadata is the PaymentIntent's metadata (nil: none); payonce's keys
	// (payonce_op, payonce_key, payonce_kind) may be set to make it look
	// like one a payonce client made.
	Metadata map[string]string
	// Created is its creation time; zero is the fake's clock now. Stripe
	// dates objects in whole seconds.
	Created time.Time
}

// StripeRefundSpec describes a Refund made out of band (InjectRefund).
type StripeRefundSpec struct {
	// PaymentIntent is the id of a succeeded PaymentIntent of the fake.
	PaymentIntent string
	// Amount in minor units; 0 refunds whatever remains.
	Amount int64
	// Status is succeeded (the default), pending or failed.
	Status string
	// Metadata is the Refund's metadata (nil: none).
	Metadata map[string]string
	// Created is its creation time; zero is the fake's clock now.
	Created time.Time
}

// stripeInjectStatuses are the statuses InjectPaymentIntent makes.
var stripeInjectStatuses = []string{"succeeded", "requires_capture", "processing", "requires_payment_method",
	"requires_confirmation", "requires_action", "canceled"}

// stripeCancellationReasons are Stripe's PaymentIntent cancellation_reason
// values (API reference, PaymentIntent object).
var stripeCancellationReasons = []string{"duplicate", "fraudulent", "requested_by_customer", "abandoned",
	"failed_invoice", "void_invoice", "automatic", "expired"}

// InjectPaymentIntent makes a PaymentIntent that no client of the fake
// asked for, as another integration or the Dashboard would: no request, no
// idempotency key, no webhook event. It is listed, searched and read like
// any other; Truth shows it with Injected set. It returns its id, or an
// error saying what in spec is wrong.
func (s *StripeHandler) InjectPaymentIntent(spec StripeIntentSpec) (string, error) {
	status := orDefault(spec.Status, "succeeded")
	cur := strings.ToLower(spec.Currency)
	switch {
	case spec.Amount <= 0:
		return "", fmt.Errorf("mocks: InjectPaymentIntent: Amount %d is not positive; give minor units > 0", spec.Amount)
	case len(cur) != 3 || strings.Trim(cur, "abcdefghijklmnopqrstuvwxyz") != "":
		return "", fmt.Errorf("mocks: InjectPaymentIntent: Currency %q is not a three-letter ISO 4217 code", spec.Currency)
	case !slices.Contains(stripeInjectStatuses, status):
		return "", fmt.Errorf("mocks: InjectPaymentIntent: Status %q is not one of %v", spec.Status, stripeInjectStatuses)
	case spec.CancellationReason != "" && !slices.Contains(stripeCancellationReasons, spec.CancellationReason):
		return "", fmt.Errorf("mocks: InjectPaymentIntent: CancellationReason %q is not one of %v", spec.CancellationReason, stripeCancellationReasons)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	created := s.injectTime(spec.Created)
	id := s.core.ids.next("pi_", 24)
	in := &stripeIntent{
		stored: s.injectStamp(created),
		pi: stripewire.PaymentIntent{
			ID: id, Object: "payment_intent", Amount: spec.Amount, CaptureMethod: "automatic",
			ClientSecret: id + "_secret_" + s.core.ids.next("", 25), ConfirmationMethod: "automatic",
			Created: created.Unix(), Currency: cur, Metadata: maps.Clone(spec.Metadata),
			PaymentMethodTypes: []string{"card"}, Status: status,
		},
	}
	if in.pi.Metadata == nil {
		in.pi.Metadata = map[string]string{}
	}
	pi := &in.pi
	charge := func(paid bool) *stripewire.Charge {
		chID := s.core.ids.next("ch_", 24)
		ch := &stripewire.Charge{ID: chID, Object: "charge", Amount: pi.Amount, Created: pi.Created, Currency: pi.Currency,
			Metadata: cloneMap(pi.Metadata), Paid: paid, PaymentIntent: pi.ID, Status: "succeeded"}
		if !paid {
			ch.Status, ch.FailureCode, ch.FailureMessage = "failed", "card_declined", "Your card was declined."
		}
		s.chargeObjs[chID] = ch
		in.chargeIDs = append(in.chargeIDs, chID)
		pi.LatestCharge = chID
		if paid {
			in.authorized, in.chargeID = true, chID
			s.charges[chID] = in
		}
		return ch
	}
	switch status {
	case "succeeded":
		ch := charge(true)
		ch.Captured, ch.AmountCaptured = true, pi.Amount
		pi.AmountReceived = pi.Amount
	case "requires_capture":
		charge(true)
		pi.CaptureMethod, pi.AmountCapturable = "manual", pi.Amount
	case "requires_payment_method":
		ch := charge(false)
		pi.LastPaymentError = &stripewire.Error{Type: "card_error", Code: "card_declined", DeclineCode: "generic_decline",
			Message: ch.FailureMessage, Charge: ch.ID}
	case "requires_action":
		pi.NextAction = map[string]any{"type": "use_stripe_sdk", "use_stripe_sdk": map[string]any{}}
	case "canceled":
		if spec.Authorized {
			ch := charge(true)
			ch.AmountRefunded, ch.Refunded = ch.Amount, true
			pi.CaptureMethod = "manual"
		}
		pi.CanceledAt = created.Unix()
		pi.CancellationReason = orDefault(spec.CancellationReason, "requested_by_customer")
	}
	s.intents[id] = in
	s.intentOrder = append(s.intentOrder, in)
	s.injected[id] = true
	return id, nil
}

// InjectRefund makes a Refund of a succeeded PaymentIntent that no client
// of the fake asked for (a refund from the Dashboard, say): no request, no
// idempotency key, no webhook event. A succeeded or pending one counts
// against what remains to refund, as any refund does. It returns its id,
// or an error saying what in spec is wrong.
func (s *StripeHandler) InjectRefund(spec StripeRefundSpec) (string, error) {
	status := orDefault(spec.Status, stripeRefundStatusSucceded)
	if status != stripeRefundStatusSucceded && status != stripeRefundStatusPending && status != stripeRefundStatusFailed {
		return "", fmt.Errorf("mocks: InjectRefund: Status %q is not succeeded, pending or failed", spec.Status)
	}
	if spec.Amount < 0 {
		return "", fmt.Errorf("mocks: InjectRefund: Amount %d is negative; give minor units, or 0 for what remains", spec.Amount)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.intents[spec.PaymentIntent]
	if in == nil || in.pi.Status != "succeeded" || in.chargeID == "" {
		return "", fmt.Errorf("mocks: InjectRefund: %q is no succeeded PaymentIntent of the fake", spec.PaymentIntent)
	}
	remaining := in.pi.AmountReceived - in.refunded
	amount := spec.Amount
	if amount == 0 {
		amount = remaining
	}
	counts := status != stripeRefundStatusFailed
	if counts && (amount <= 0 || amount > remaining) {
		return "", fmt.Errorf("mocks: InjectRefund: amount %d is more than the %d that remains to refund", amount, remaining)
	}
	created := s.injectTime(spec.Created)
	re := &stripeRefund{stored: s.injectStamp(created), re: stripewire.Refund{
		ID: s.core.ids.next("re_", 24), Object: "refund", Amount: amount, BalanceTransaction: s.core.ids.next("txn_", 24),
		Charge: in.chargeID, Created: created.Unix(), Currency: in.pi.Currency, Metadata: maps.Clone(spec.Metadata),
		PaymentIntent: in.pi.ID, Status: status,
	}}
	if re.re.Metadata == nil {
		re.re.Metadata = map[string]string{}
	}
	if counts {
		in.refunded += amount
		if ch := s.chargeObjs[in.chargeID]; ch != nil {
			ch.AmountRefunded += amount
			ch.Refunded = ch.AmountRefunded >= ch.AmountCaptured
		}
	} else {
		re.re.FailureReason = "unknown"
	}
	s.refunds[re.re.ID] = re
	s.refundOrder = append(s.refundOrder, re)
	s.injected[re.re.ID] = true
	return re.re.ID, nil
}

// FailRefundSilently is FailRefund without its webhook events: the refund
// fails later and the merchant's endpoint never hears of it (the
// deliveries were lost, or the endpoint did not subscribe to them). Only
// a lookup or an audit can find it.
func (s *StripeHandler) FailRefundSilently(id, reason string) error {
	return s.failRefund(id, reason, false)
}

// ExpireAuthorization cancels an authorized PaymentIntent (requires_capture)
// as Stripe does when its authorization expires uncaptured ("Uncaptured
// PaymentIntents will be canceled exactly seven days after they are
// created", API reference, Capture a PaymentIntent): status canceled,
// cancellation_reason "automatic" (a reason "generated by Stripe
// internally", API reference, PaymentIntent object), the hold released
// (its charge refunded in full), and payment_intent.canceled emitted. No
// request of the client causes it.
func (s *StripeHandler) ExpireAuthorization(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.intents[id]
	if in == nil {
		return fmt.Errorf("mocks: ExpireAuthorization: no PaymentIntent %q; pass the pi_ id the fake answered", id)
	}
	pi := &in.pi
	if pi.Status != "requires_capture" {
		return fmt.Errorf("mocks: ExpireAuthorization: PaymentIntent %s has status %s; only an authorization (requires_capture) expires", id, pi.Status)
	}
	if ch := s.chargeObjs[in.chargeID]; ch != nil {
		ch.AmountRefunded, ch.Refunded = ch.Amount, true
	}
	now := s.core.now()
	pi.Status, pi.CanceledAt, pi.CancellationReason, pi.AmountCapturable = "canceled", now.Unix(), "automatic", 0
	s.emitLocked(nil, now, stripeEvtIntentCanceled, *pi, nil)
	return nil
}

// injectTime is created, or the fake's clock when it is zero. s.mu is held.
func (s *StripeHandler) injectTime(created time.Time) time.Time {
	if created.IsZero() {
		return s.core.now()
	}
	return created
}

// injectStamp numbers an injected object; it has no idempotency key.
// s.mu must be held.
func (s *StripeHandler) injectStamp(created time.Time) stored {
	s.seq++
	return stored{seq: s.seq, createdAt: created}
}

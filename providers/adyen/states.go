package adyen

import (
	"strconv"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// paymentState maps a payment's resultCode: the one mapping Classify uses
// for the answer to POST /payments (Adyen has no API a lookup could read a
// payment with; the webhooks' AUTHORISATION success flag is the other
// account of the same fact, see webhook.go).
//
//   - Authorised: succeeded (final).
//   - Refused, Cancelled, Error: failed (each documented as "a final
//     state"), DeclineCode the refusalReasonCode, Message the
//     refusalReason.
//   - Pending, Received: processing (the outcome comes by AUTHORISATION
//     webhook).
//   - RedirectShopper, IdentifyShopper, ChallengeShopper, PresentToShopper:
//     failed with code shopper_action_required. The payment waits for a
//     shopper to act (a redirect, 3-D Secure), which payonce cannot do: it
//     makes only payments with stored details and no shopper present. No
//     money moves unless a shopper completes the action with the answer's
//     action data, which payonce never shows anyone; should an
//     AUTHORISATION success=true arrive anyway, the ledger records it as a
//     contradiction for an operator. Processing would be worse: nothing
//     would ever settle it, and every resend under the key replays the
//     same answer until the key window ends.
//   - PartiallyAuthorised, and anything else (AuthenticationFinished,
//     AuthenticationNotRequired, codes the adapter does not know): unknown
//     (maybe_sent); PartiallyAuthorised is caught before as a
//     contradiction (another amount than requested).
func (p *Provider) paymentState(pm paymentResponse) adapterkit.State {
	fail := func(code, fallback string) adapterkit.State {
		s := adapterkit.State{Verdict: adapterkit.VerdictFailed, Code: code, Decline: p.scrub(pm.RefusalReasonCode), Message: p.scrub(pm.RefusalReason)}
		if s.Message == "" {
			s.Message = fallback
		}
		return s
	}
	switch pm.ResultCode {
	case resultAuthorised:
		return adapterkit.State{Verdict: adapterkit.VerdictSucceeded}
	case resultRefused:
		return fail(codeRefused, "adyen: payment refused")
	case resultCancelled:
		return fail(codeCancelled, "adyen: payment cancelled")
	case resultError:
		return fail(codeError, "adyen: payment error")
	case resultPending, resultReceived:
		return adapterkit.State{Verdict: adapterkit.VerdictProcessing}
	case resultRedirectShopper, resultIdentifyShopper, resultChallengeShopper, resultPresentToShopper:
		return adapterkit.State{Verdict: adapterkit.VerdictFailed, Code: codeShopperAction,
			Message: "adyen: resultCode " + pm.ResultCode + ": the payment needs a shopper to act (redirect or authentication); payonce makes only non-interactive payments with stored payment details, so nothing was paid"}
	}
	return adapterkit.State{Verdict: adapterkit.VerdictUnknown, Message: "payment resultCode " + quote(p.scrub(pm.ResultCode))}
}

// paymentContradiction checks that pm is the payment the charge r of
// operation op asked for: its merchantReference (the adapter sends the
// operation id as reference), its amount and currency when the answer
// carries them. A partial authorisation is another amount than requested.
func paymentContradiction(r payonce.Request, op string, pm paymentResponse) string {
	var got int64
	var cur string
	if pm.Amount == nil {
		r.Amount = 0
	} else {
		got, cur = pm.Amount.Value, pm.Amount.Currency
	}
	if why := adapterkit.Belongs(r, op, pm.MerchantReference, got, cur); why != "" {
		return why
	}
	if pm.ResultCode == resultPartiallyAuthorised {
		return "the payment was only partially authorised (resultCode PartiallyAuthorised)"
	}
	return ""
}

// modificationContradiction checks that m is the capture, cancel or refund
// operation op asked for: its reference, the payment it acts on, and the
// amount and currency when both sides carry them.
func modificationContradiction(r payonce.Request, op string, m modificationResponse) string {
	var got int64
	var cur string
	if m.Amount == nil || r.Kind == payonce.KindCancel {
		r.Amount, r.Currency = 0, ""
	} else {
		got, cur = m.Amount.Value, m.Amount.Currency
	}
	if why := adapterkit.Belongs(r, op, m.Reference, got, cur); why != "" {
		return why
	}
	if m.PaymentPspReference != "" && r.PaymentRef != "" && m.PaymentPspReference != r.PaymentRef {
		return "the provider's object acts on payment " + quote(m.PaymentPspReference) + ", not " + quote(r.PaymentRef)
	}
	return ""
}

// quote is a value of the provider's as the messages show it.
func quote(s string) string { return strconv.Quote(s) }

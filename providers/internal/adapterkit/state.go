package adapterkit

import (
	"fmt"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// Verdict is what one provider object says about the operation it was read
// for. An adapter maps each of its provider's statuses to one, once, and
// both Classify (the object in a 2xx answer) and Lookup (the object read by
// id) turn that into their answer, so that the two never disagree.
type Verdict int

const (
	// VerdictUnknown: a status the adapter does not know. Classify:
	// maybe_sent; Lookup: an error (the answer is not known).
	VerdictUnknown Verdict = iota
	// VerdictProcessing: the provider is still working on it.
	VerdictProcessing
	// VerdictSucceeded: the operation took effect.
	VerdictSucceeded
	// VerdictFailed: the operation definitively failed.
	VerdictFailed
	// VerdictNotYet: the operation has not taken effect and may still (a
	// capture or cancel of a payment that still waits). Classify:
	// maybe_sent; Lookup: not found, so a resend with the same key
	// completes it.
	VerdictNotYet
)

// State is one object's verdict, with the codes a failure reports. Message
// says what was seen for a VerdictUnknown or VerdictNotYet, and why for a
// VerdictFailed; it must already be scrubbed.
type State struct {
	Verdict       Verdict
	Code, Decline string
	Message       string
}

// Outcome turns the state into the classification of a 2xx answer, filling
// o (which carries the answer's status, request id and reference).
func (s State) Outcome(provider string, o payonce.Outcome) payonce.Outcome {
	switch s.Verdict {
	case VerdictSucceeded:
		o.Class = ledger.OutcomeSuccess
	case VerdictProcessing:
		o.Class = ledger.OutcomeSuccess
		o.Processing = true
	case VerdictFailed:
		o.Class = ledger.OutcomeRefused
		o.Code, o.DeclineCode, o.Message = s.Code, s.Decline, s.Message
	default: // VerdictNotYet, VerdictUnknown
		return Unreadable(provider, o, s.Message)
	}
	return o
}

// Result turns the state into what a lookup found for the object id; an
// error for VerdictUnknown.
func (s State) Result(provider, id string) (payonce.LookupResult, error) {
	r := payonce.LookupResult{ProviderRef: id, Refs: []string{id}}
	switch s.Verdict {
	case VerdictSucceeded:
		r.State = payonce.LookupSucceeded
	case VerdictProcessing:
		r.State = payonce.LookupProcessing
	case VerdictFailed:
		r.State = payonce.LookupFailed
		r.Code, r.DeclineCode, r.Message = s.Code, s.Decline, s.Message
	case VerdictNotYet:
		return payonce.LookupResult{State: payonce.LookupNotFound}, nil
	default:
		return payonce.LookupResult{}, fmt.Errorf("%s: lookup: object %s: %s, which the adapter does not know", provider, id, s.Message)
	}
	return r, nil
}

package ledgerdriver

import (
	"encoding/json"
	"strconv"

	"github.com/payonce/payonce/ledger"
)

// ParseWebhookEffect turns a string into a WebhookEffect, or returns an error
// naming the allowed values.
func ParseWebhookEffect(s string) (ledger.WebhookEffect, error) {
	return parseEnum("webhook effect", s, ledger.WebhookEffects...)
}

// ParseWebhookDisposition turns a string into a WebhookDisposition, or
// returns an error naming the allowed values.
func ParseWebhookDisposition(s string) (ledger.WebhookDisposition, error) {
	return parseEnum("webhook disposition", s, ledger.WebhookDispositions...)
}

// ValidateInbox checks InboxFilter.
func ValidateInbox(f ledger.InboxFilter) error {
	if f.Disposition != "" {
		if _, err := ParseWebhookDisposition(string(f.Disposition)); err != nil {
			return invalid("Disposition", "%v", err)
		}
	}
	return checkListLimit(f.Limit)
}

// ValidateRecordWebhook checks RecordWebhookParams: the event's fields name what to fix.
func ValidateRecordWebhook(p ledger.RecordWebhookParams) error {
	e := p.Event
	switch {
	case p.Now.IsZero():
		return invalid("Now", "is zero; pass the current time")
	case e.Provider == "":
		return invalid("Event.Provider", "is empty; set the provider's name")
	case e.ID == "":
		return invalid("Event.ID", "is empty; set the provider's event id (or the adapter's derived identity)")
	case len(e.ID) > ledger.MaxWebhookIDBytes:
		return invalid("Event.ID", "is %d bytes; at most %d", len(e.ID), ledger.MaxWebhookIDBytes)
	case e.Type == "":
		return invalid("Event.Type", "is empty; set the provider's event type")
	case len(e.Targets) > ledger.MaxWebhookTargets:
		return invalid("Event.Targets", "has %d targets; at most %d", len(e.Targets), ledger.MaxWebhookTargets)
	}
	if err := checkAllStored("Event.Provider", e.Provider, "Event.ID", e.ID, "Event.Type", e.Type,
		"Event.Unreadable", e.Unreadable); err != nil {
		return err
	}
	if e.Unreadable != "" {
		// Nothing of an event the adapter could not read may settle an
		// operation: it is recorded for an operator, never applied.
		switch {
		case len(e.Targets) > 0:
			return invalid("Event.Targets", "has %d targets, but the event is Unreadable; an unreadable event has none", len(e.Targets))
		case len(e.Unreadable) > ledger.MaxTextBytes:
			return invalid("Event.Unreadable", "is %d bytes; at most %d", len(e.Unreadable), ledger.MaxTextBytes)
		}
	}
	for i, t := range e.Targets {
		f := func(name string) string { return "Event.Targets[" + strconv.Itoa(i) + "]." + name }
		if t.Kind == "" {
			return invalid(f("Kind"), "is empty; set the kind of operation the target speaks of")
		}
		if _, err := ParseWebhookEffect(string(t.Effect)); err != nil {
			return invalid(f("Effect"), "%v", err)
		}
		if t.OperationID == "" && t.ProviderRef == "" && t.PaymentRef == "" {
			return invalid(f("OperationID"), "is empty, and so are ProviderRef and PaymentRef; a target needs one of them")
		}
		if len(t.Detail) > ledger.MaxTextBytes {
			return invalid(f("Detail"), "is %d bytes; at most %d", len(t.Detail), ledger.MaxTextBytes)
		}
		if t.Amount < 0 {
			return invalid(f("Amount"), "is %d; an object's amount is at least 0 (0: not given)", t.Amount)
		}
		if err := checkAllStored(f("Kind"), t.Kind, f("OperationID"), t.OperationID, f("ProviderRef"), t.ProviderRef,
			f("PaymentRef"), t.PaymentRef, f("Key"), t.Key, f("Currency"), t.Currency, f("Detail"), t.Detail); err != nil {
			return err
		}
		if t.Result != nil && !json.Valid(t.Result) {
			return invalid(f("Result"), "is not valid JSON")
		}
	}
	return nil
}

// WebhookActor is the actor of the audit entries an event writes.
func WebhookActor(provider string) string { return "webhook:" + provider }

package sqlstore

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/payonce/payonce/ledger"
)

// Unreadable events (ledger.WebhookEvent.Unreadable): verified by the
// adapter, not read. They are recorded in the inbox like any event (the
// same insert-or-nothing on (provider, event id), so a redelivery is a
// duplicate) with one outcome, ledger.WebhookUnreadable, and change no
// operation. The reason is kept in the entry's targets column, which an
// unreadable event has no use for: a JSON object {"unreadable": reason}
// instead of the array of targets, so that no migration is needed.

// RecordEvent runs ledger.Store.RecordWebhook for validated p with the
// store's steps, inside its transaction: RecordWebhook for an event that
// was read, recordUnreadable for one that was not.
func RecordEvent(p ledger.RecordWebhookParams, steps WebhookSteps) (ledger.WebhookReport, error) {
	if p.Event.Unreadable == "" {
		return RecordWebhook(p, steps)
	}
	return recordUnreadable(steps)
}

// recordUnreadable records an unreadable event once: its inbox entry
// (steps.Insert, with the text EncodeInbox made) and its one outcome.
func recordUnreadable(steps WebhookSteps) (ledger.WebhookReport, error) {
	if rep, inserted, err := insertOrReplay(steps); err != nil || !inserted {
		return rep, err
	}
	// The outcome row is what ListWebhooks' disposition filter finds (its
	// index), and what the telemetry and the CLI show.
	outs := []ledger.WebhookOutcome{{Target: ledger.UnreadableTarget, Disposition: ledger.WebhookUnreadable}}
	if err := steps.SaveOutcomes(outs); err != nil {
		return ledger.WebhookReport{}, err
	}
	return ledger.WebhookReport{Outcomes: outs}, nil
}

// storedUnreadable is the targets column of an unreadable event.
type storedUnreadable struct {
	Unreadable string `json:"unreadable"`
}

// EncodeInbox is the JSON text the stores keep in the targets column of
// event e's inbox entry: its targets (EncodeTargets), or, for an
// unreadable event, the reason.
func EncodeInbox(e ledger.WebhookEvent) (string, error) {
	if e.Unreadable == "" {
		return EncodeTargets(e.Targets)
	}
	b, err := json.Marshal(storedUnreadable{Unreadable: e.Unreadable})
	return string(b), err
}

// DecodeInbox sets e's Targets (or Unreadable) and Outcomes from the two
// JSON texts a list query reads for an inbox entry (see EncodeInbox,
// DecodeOutcomes); e's Provider and ID name the entry in a corrupt error.
func DecodeInbox(e *ledger.InboxEntry, targets, outcomes string) error {
	if t := bytes.TrimSpace([]byte(targets)); len(t) == 0 || t[0] != '{' {
		return DecodeInboxLists(e, targets, outcomes)
	}
	var u storedUnreadable
	if err := json.Unmarshal([]byte(targets), &u); err != nil || u.Unreadable == "" {
		if err == nil {
			err = errNoReason
		}
		return corruptEntry(e.Provider, e.ID, "targets", err)
	}
	e.Unreadable = u.Unreadable
	var err error
	e.Outcomes, err = DecodeOutcomes(e.Provider, e.ID, outcomes)
	return err
}

// errNoReason: an object in the targets column without a reason.
var errNoReason = errors.New("the object holds no unreadable reason")

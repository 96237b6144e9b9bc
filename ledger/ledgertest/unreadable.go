package ledgertest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// Unreadable events (WebhookEvent.Unreadable): verified, not read. They
// are recorded once, with one outcome (WebhookUnreadable), change no
// operation, and are listed with their reason, so that the provider is
// answered 2xx once and an operator sees them.

func unreadableEvent(id, reason string) ledger.WebhookEvent {
	return ledger.WebhookEvent{Provider: "adyen", ID: id, Type: "AUTHORISATION", OccurredAt: at(-time.Hour), Unreadable: reason}
}

var unreadableOutcome = ledger.WebhookOutcome{Target: ledger.UnreadableTarget, Disposition: ledger.WebhookUnreadable}

// An unreadable event is recorded once and changes nothing; its redelivery
// is a duplicate with the same outcome; it is listed with its reason and
// found by the unreadable disposition.
func testWebhookUnreadable(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-1")
	hd := reach(t, s, op, ownerA, ledger.StatusUnknown)
	before := snapshot(t, s)
	now := hd.now.Add(time.Second)
	reason := `item 1 (pspReference "PSP1"): amount.value "12.5" is not an integer in minor units`
	e := unreadableEvent("unreadable:4f2a", reason)
	mustRecordNew(t, s, e, now, unreadableOutcome)
	require.Equal(t, before, snapshot(t, s), "an unreadable event changes no operation")

	// A readable event of the same delivery is applied as ever.
	read := evt("evt_ok", "payment_intent.succeeded", byID(op.ID, ledger.EffectSucceeded))
	mustRecordNew(t, s, read, now.Add(time.Second), outcome(0, op.ID, ledger.WebhookSettled, ledger.StatusUnknown, ledger.StatusSucceeded))

	for i := range 2 {
		rep := mustRecord(t, s, e, now.Add(time.Duration(i+2)*time.Hour))
		require.True(t, rep.Duplicate, "redelivery %d of the unreadable event", i+1)
		require.Equal(t, []ledger.WebhookOutcome{unreadableOutcome}, rep.Outcomes)
	}

	got := mustListWebhooks(t, s, ledger.InboxFilter{Disposition: ledger.WebhookUnreadable})
	require.Equal(t, []string{"adyen/unreadable:4f2a"}, entryIDs(got), "the unreadable disposition finds it")
	require.Equal(t, reason, got[0].Unreadable, "the reason reads back")
	require.Nil(t, got[0].Targets)
	require.Equal(t, []ledger.WebhookOutcome{unreadableOutcome}, got[0].Outcomes)
	require.Equal(t, "AUTHORISATION", got[0].Type)
	requireTime(t, e.OccurredAt, got[0].OccurredAt, "OccurredAt")

	all := mustListWebhooks(t, s, ledger.InboxFilter{})
	require.Equal(t, []string{"stripe/evt_ok", "adyen/unreadable:4f2a"}, entryIDs(all))
	require.Empty(t, all[0].Unreadable, "an event that was read has no reason")
	require.Len(t, all[0].Targets, 1)
	require.Empty(t, entryIDs(mustListWebhooks(t, s, ledger.InboxFilter{Disposition: ledger.WebhookUnreadable, Provider: "stripe"})))

	// A reason that JSON escapes (quotes, backslashes, non-ASCII) reads
	// back byte for byte.
	odd := unreadableEvent("unreadable:odd", "value \"x\\y\" — {\"unreadable\":1} ]")
	mustRecordNew(t, s, odd, now, unreadableOutcome)
	for _, e := range mustListWebhooks(t, s, ledger.InboxFilter{Provider: "adyen"}) {
		if e.ID == odd.ID {
			require.Equal(t, odd.Unreadable, e.Unreadable)
		}
	}
}

// An unreadable event with targets, or with a reason no store can keep,
// is refused and changes nothing.
func testWebhookUnreadableInvalid(t *testing.T, h *Harness) {
	s := h.Store
	before := seedInvalid(t, s)
	for _, c := range []struct {
		name string
		edit func(p *ledger.RecordWebhookParams)
	}{
		{"unreadable with targets", func(p *ledger.RecordWebhookParams) { p.Event.Unreadable = "no amount" }},
		{"oversized reason", func(p *ledger.RecordWebhookParams) {
			p.Event.Targets, p.Event.Unreadable = nil, strings.Repeat("r", ledger.MaxTextBytes+1)
		}},
		{"reason not UTF-8", func(p *ledger.RecordWebhookParams) { p.Event.Targets, p.Event.Unreadable = nil, "\xff" }},
		{"reason with a NUL byte", func(p *ledger.RecordWebhookParams) { p.Event.Targets, p.Event.Unreadable = nil, "a\x00b" }},
	} {
		p := validWebhook()
		c.edit(&p)
		_, err := s.RecordWebhook(t.Context(), p)
		requireInvalid(t, s, before, c.name, err)
	}
	require.Empty(t, mustListWebhooks(t, s, ledger.InboxFilter{}), "nothing was recorded")
}

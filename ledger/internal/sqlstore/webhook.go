package sqlstore

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// WebhookSteps are one store's statements for RecordWebhook. Every step
// runs inside the one durable write transaction the store opened for the
// call, and returns its errors unwrapped: the store wraps what
// RecordWebhook returns.
type WebhookSteps struct {
	// Insert records the inbox entry of the event (received at now, its
	// targets encoded with EncodeTargets) unless (provider, event id) is
	// recorded; inserted reports which. When another transaction is
	// recording the same event, Insert waits for it to end.
	Insert func() (inserted bool, err error)
	// Outcomes reads the stored outcomes of the event, in order.
	Outcomes func() ([]ledger.WebhookOutcome, error)
	// ByID reads and locks operation id if its provider and kind are the
	// given ones; found is false when there is no such operation.
	ByID func(id, provider, kind string) (op ledger.Operation, found bool, err error)
	// Tombstone reads the tombstone of id; found is false when there is
	// none.
	Tombstone func(id string) (t ledgerdriver.Tombstone, found bool, err error)
	// TombstonesByRef reads the ids of at most two tombstones of provider
	// and kind whose provider reference is ref, in ID order.
	TombstonesByRef func(provider, kind, ref string) ([]string, error)
	// ByRef reads and locks, in ID order, the operations of provider and
	// kind whose provider reference (byPayment false) or payment reference
	// (byPayment true) is ref.
	ByRef func(byPayment bool, provider, kind, ref string) ([]ledger.Operation, error)
	// LatestAttempt reads the latest attempt of operation id; nil when it
	// has none.
	LatestAttempt func(id string) (*ledger.Attempt, error)
	// Earlier reads what operation id recorded under its earlier key
	// generations: EarlierQuery's rows.
	Earlier func(id, current string) ([][2]string, error)
	// Write saves ch.Op's mutable columns, updates the attempt row of
	// ch.Attempt when it is set, and appends ch.Events stamped now,
	// numbered after the operation's last one. The caller holds the row
	// lock (ByID, ByRef).
	Write func(ch ledgerdriver.Change, now time.Time) error
	// SaveOutcomes stores outs with the inbox entry, in order.
	SaveOutcomes func(outs []ledger.WebhookOutcome) error
	// Reopen replaces the tombstone tomb (as Tombstone.Operation returns
	// it) with ch.Op, the operation ledgerdriver.ApplyWebhook reopened in
	// review: it deletes the tombstone, inserts ch.Op's row in tomb's
	// final status without the feed's creation entry, then writes ch as
	// Write does, so that the feed records the change from tomb's status
	// into manual_review as for a live operation. It fails when the
	// tombstone is gone (another transaction reopened it): nothing is then
	// recorded, and a redelivery applies the event to the live operation.
	Reopen func(tomb ledger.Operation, ch ledgerdriver.Change, now time.Time) error
}

// RecordWebhook runs ledger.Store.RecordWebhook for validated p with the
// store's steps, inside its transaction.
//
// Why the inbox row comes first: its primary key (provider, event id) is
// what makes the event apply once. The insert-or-nothing decides, under
// the database's own uniqueness check, which of any number of concurrent
// deliveries applies the event; every other one (and every later
// redelivery or replay) finds it recorded and changes nothing.
func RecordWebhook(p ledger.RecordWebhookParams, steps WebhookSteps) (ledger.WebhookReport, error) {
	if rep, inserted, err := insertOrReplay(steps); err != nil || !inserted {
		return rep, err
	}
	now := ledgerdriver.UTC(p.Now)
	e := p.Event
	var outs []ledger.WebhookOutcome
	// An event decides each operation once. An adapter may name one object
	// several ways (PayPal: by the operation id it carries, by the payment's
	// id, by the order's), so that the event matches whatever the ledger
	// recorded; once one target has been applied to an operation, another
	// that finds the same operation is noted and writes nothing, or one
	// event would write two outcomes (and two audit entries) on it. Unless
	// it escalates: a later target that would send the operation to
	// review (a contradiction, a second object that succeeded) is applied,
	// since suppressing it could hide money that moved twice.
	applied := map[string]bool{}
	for i, t := range e.Targets {
		cands, byPayment, err := candidates(e.Provider, t, steps)
		if err != nil {
			return ledger.WebhookReport{}, err
		}
		switch {
		case len(cands) == 0:
			outs = append(outs, ledger.WebhookOutcome{Target: i, Disposition: ledger.WebhookUnmatched})
		case len(cands) == 1 && applied[cands[0].ID] && !escalates(cands[0], e, t, now, steps):
			op := cands[0]
			outs = append(outs, ledger.WebhookOutcome{Target: i, OperationID: op.ID, Disposition: ledger.WebhookNoted, From: op.Status, To: op.Status})
		case len(cands) == 1 && !byPayment:
			applied[cands[0].ID] = true
			out, err := applyOne(cands[0], e, t, now, steps)
			if err != nil {
				return ledger.WebhookReport{}, err
			}
			out.Target = i
			outs = append(outs, out)
		default:
			// Only the payment matched (or a reference several operations
			// share): settling one of them on a guess could record money on
			// the wrong operation, even when it is the only one payonce
			// knows, because a payment may also have refunds or captures
			// made outside payonce (the provider's dashboard). Each
			// unsettled one is made due for a status lookup instead, which
			// asks the provider about that operation's own object.
			disp := ledger.WebhookAmbiguous
			if len(cands) == 1 {
				disp = ledger.WebhookNudged
			}
			lookup := t
			lookup.Effect = ledger.EffectLookup
			for _, op := range cands {
				to, got := op.Status, ledger.WebhookNoted
				if !op.Tombstone && !op.Status.Final() && !applied[op.ID] {
					applied[op.ID] = true
					var ch ledgerdriver.Change
					ch, got = ledgerdriver.ApplyWebhook(op, ledgerdriver.Generations{}, e, lookup, nil, now)
					if got == ledger.WebhookNudged {
						if err := steps.Write(ch, now); err != nil {
							return ledger.WebhookReport{}, err
						}
						to = ch.Op.Status
					}
				}
				if len(cands) == 1 {
					disp = got
				}
				outs = append(outs, ledger.WebhookOutcome{Target: i, OperationID: op.ID,
					Disposition: disp, From: op.Status, To: to})
			}
		}
	}
	if len(outs) > 0 {
		if err := steps.SaveOutcomes(outs); err != nil {
			return ledger.WebhookReport{}, err
		}
	}
	return ledger.WebhookReport{Outcomes: outs}, nil
}

// escalates reports whether applying target t of event e to op would send
// op to review (a contradiction or a duplicate). It writes nothing; an
// error reading op's history counts as escalating, so that the target is
// applied and the error surfaces there.
func escalates(op ledger.Operation, e ledger.WebhookEvent, t ledger.WebhookTarget, now time.Time, steps WebhookSteps) bool {
	_, disp, err := planOne(op, e, t, now, steps)
	return err != nil || disp == ledger.WebhookContradiction || disp == ledger.WebhookDuplicate
}

// insertOrReplay inserts the event's inbox entry; when it was recorded
// already, it returns the first delivery's outcomes as a duplicate, and
// inserted false.
func insertOrReplay(steps WebhookSteps) (rep ledger.WebhookReport, inserted bool, err error) {
	if inserted, err = steps.Insert(); err != nil || inserted {
		return ledger.WebhookReport{}, inserted, err
	}
	outs, err := steps.Outcomes()
	if err != nil {
		return ledger.WebhookReport{}, false, err
	}
	return ledger.WebhookReport{Duplicate: true, Outcomes: outs}, false, nil
}

// candidates finds the operations target t of an event of provider may
// speak of (see ledger.WebhookTarget): by operation id (the live operation,
// or else its tombstone), else by provider reference, else by payment
// reference, each only among operations of the event's provider and the
// target's kind, locked.
//
// byPayment reports that only the payment reference matched.
func candidates(provider string, t ledger.WebhookTarget, steps WebhookSteps) (ops []ledger.Operation, byPayment bool, err error) {
	if t.OperationID != "" {
		op, found, err := steps.ByID(t.OperationID, provider, t.Kind)
		if err != nil {
			return nil, false, err
		}
		if found {
			return []ledger.Operation{op}, false, nil
		}
		tomb, found, err := steps.Tombstone(t.OperationID)
		if err != nil {
			return nil, false, err
		}
		if found && tomb.Provider == provider && tomb.Kind == t.Kind {
			return []ledger.Operation{tomb.Operation()}, false, nil
		}
		if !found {
			// Another event may have reopened the tombstone between the two
			// reads (see Reopen): its operation committed after ByID's
			// statement began, and its tombstone was gone when this one
			// began. A read now finds the operation.
			live, found, err := steps.ByID(t.OperationID, provider, t.Kind)
			if err != nil {
				return nil, false, err
			}
			if found {
				return []ledger.Operation{live}, false, nil
			}
		}
	}
	for _, ref := range []struct {
		byPayment bool
		value     string
	}{{false, t.ProviderRef}, {true, t.PaymentRef}} {
		if ref.value == "" {
			continue
		}
		ops, err := steps.ByRef(ref.byPayment, provider, t.Kind, ref.value)
		if err != nil {
			return nil, false, err
		}
		if len(ops) == 0 && !ref.byPayment {
			// No live operation holds the reference: Cleanup may have
			// removed it. An event that names the object only by the
			// provider's id (a Stripe dispute) must still reach its
			// tombstone, or a chargeback after Cleanup is only "unmatched".
			tomb, found, err := tombstoneByRef(provider, t.Kind, ref.value, steps)
			if err != nil || found {
				return []ledger.Operation{tomb}, false, err
			}
		}
		if len(ops) == 0 {
			continue
		}
		if ref.byPayment && t.ProviderRef != "" {
			// An object an earlier key generation recorded is no longer the
			// operation's ProviderRef (a resend starts clean), so only its
			// payment matched: find the operation whose resend resolution
			// kept it, so that the event is applied to that operation as an
			// earlier generation's object instead of only nudging it.
			for _, op := range ops {
				earlier, err := earlierGenerations(op, steps)
				if err != nil {
					return nil, false, err
				}
				if slices.Contains(earlier.Refs, t.ProviderRef) {
					return []ledger.Operation{op}, false, nil
				}
			}
		}
		return ops, ref.byPayment, nil
	}
	return nil, false, nil
}

// tombstoneByRef reads the one tombstone of provider and kind whose
// provider reference is ref; found is false when there is none, or more
// than one (an event is never applied to one of several on a guess).
func tombstoneByRef(provider, kind, ref string, steps WebhookSteps) (ledger.Operation, bool, error) {
	ids, err := steps.TombstonesByRef(provider, kind, ref)
	if err != nil || len(ids) != 1 {
		return ledger.Operation{}, false, err
	}
	tomb, found, err := steps.Tombstone(ids[0])
	if err != nil || !found || tomb.Provider != provider || tomb.Kind != kind {
		return ledger.Operation{}, false, err
	}
	return tomb.Operation(), true, nil
}

// applyOne applies target t of event e to op, the one operation it
// matched, and writes the change. A tombstone changes only when the event
// puts the operation in review: it is then reopened (Reopen).
func applyOne(op ledger.Operation, e ledger.WebhookEvent, t ledger.WebhookTarget, now time.Time, steps WebhookSteps) (ledger.WebhookOutcome, error) {
	ch, disp, err := planOne(op, e, t, now, steps)
	if err != nil {
		return ledger.WebhookOutcome{}, err
	}
	switch {
	case !op.Tombstone:
		err = steps.Write(ch, now)
	case !ch.Op.Tombstone:
		err = steps.Reopen(op, ch, now)
	}
	if err != nil {
		return ledger.WebhookOutcome{}, err
	}
	return ledger.WebhookOutcome{OperationID: op.ID, Disposition: disp, From: op.Status, To: ch.Op.Status}, nil
}

// planOne is what target t of event e does to op (ledgerdriver.ApplyWebhook,
// given op's latest attempt when in flight and its earlier generations),
// without writing it.
func planOne(op ledger.Operation, e ledger.WebhookEvent, t ledger.WebhookTarget, now time.Time, steps WebhookSteps) (ledgerdriver.Change, ledger.WebhookDisposition, error) {
	var recorded *ledger.Attempt
	if !op.Tombstone && op.Status == ledger.StatusInFlight {
		var err error
		if recorded, err = steps.LatestAttempt(op.ID); err != nil {
			return ledgerdriver.Change{}, "", err
		}
	}
	earlier, err := earlierGenerations(op, steps)
	if err != nil {
		return ledgerdriver.Change{}, "", err
	}
	ch, disp := ledgerdriver.ApplyWebhook(op, earlier, e, t, recorded, now)
	return ch, disp, nil
}

// earlierGenerations is what op recorded under its earlier key generations
// (none at generation 0, and none for a tombstone, whose history went with
// it): what ledgerdriver.ObjectOf tells an earlier generation's object by.
func earlierGenerations(op ledger.Operation, steps WebhookSteps) (ledgerdriver.Generations, error) {
	if op.Tombstone || op.Generation == 0 {
		return ledgerdriver.Generations{}, nil
	}
	rows, err := steps.Earlier(op.ID, op.Key)
	if err != nil {
		return ledgerdriver.Generations{}, err
	}
	var keys, resolutions, webhooks []string
	for _, r := range rows {
		switch r[0] {
		case "key":
			keys = append(keys, r[1])
		case "resolution":
			resolutions = append(resolutions, r[1])
		default:
			webhooks = append(webhooks, r[1])
		}
	}
	return ledgerdriver.Generations{Keys: keys, Refs: ledgerdriver.PreviousRefs(resolutions), Failed: ledgerdriver.FailedObjects(webhooks)}, nil
}

// EarlierQuery is the statement behind WebhookSteps.Earlier in both
// stores' dialects: ph(n) is the n-th placeholder, and attempts and events
// the tables' names. Its rows are (kind, text): "key" with a key an
// attempt carried other than the current one, "resolution" and "webhook"
// with the detail of an EventResolution or EventWebhook entry.
func EarlierQuery(ph func(n int) string, attempts, events string) string {
	return `SELECT 'key', key FROM ` + attempts + ` WHERE operation_id = ` + ph(1) + ` AND key <> ` + ph(2) + ` GROUP BY key
		UNION ALL
		SELECT kind, detail FROM ` + events + ` WHERE operation_id = ` + ph(1) + ` AND kind IN ('resolution', 'webhook')`
}

// storedTarget is the JSON form of a ledger.WebhookTarget in the inbox
// (payonce_webhooks.targets). Result is kept as base64 bytes so that it
// reads back byte for byte.
type storedTarget struct {
	Kind        string               `json:"kind"`
	OperationID string               `json:"operation_id,omitempty"`
	ProviderRef string               `json:"provider_ref,omitempty"`
	PaymentRef  string               `json:"payment_ref,omitempty"`
	Key         string               `json:"key,omitempty"`
	Amount      int64                `json:"amount,omitempty"`
	Currency    string               `json:"currency,omitempty"`
	Effect      ledger.WebhookEffect `json:"effect"`
	Result      []byte               `json:"result,omitempty"`
	Detail      string               `json:"detail,omitempty"`
}

// EncodeTargets is the JSON text the stores keep for an event's targets.
func EncodeTargets(ts []ledger.WebhookTarget) (string, error) {
	out := make([]storedTarget, len(ts))
	for i, t := range ts {
		out[i] = storedTarget(t)
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// DecodeTargets reads what EncodeTargets wrote; nil for an event without
// targets. A value the store cannot have written is reported as corrupt.
func DecodeTargets(provider, eventID, text string) ([]ledger.WebhookTarget, error) {
	return decodeList(provider, eventID, "targets", text, func(i int, t storedTarget) (ledger.WebhookTarget, error) {
		if _, err := ledgerdriver.ParseWebhookEffect(string(t.Effect)); err != nil {
			return ledger.WebhookTarget{}, corruptEntry(provider, eventID, fmt.Sprintf("targets[%d].effect", i), err)
		}
		return ledger.WebhookTarget(t), nil
	})
}

// storedOutcome is one outcome as the stores' list queries aggregate them
// (a JSON array of objects with the outcome table's column names).
type storedOutcome struct {
	Target      int    `json:"target"`
	OperationID string `json:"operation_id"`
	Disposition string `json:"disposition"`
	From        string `json:"from_status"`
	To          string `json:"to_status"`
}

// DecodeOutcomes reads a JSON array of outcome rows (keys target,
// operation_id, disposition, from_status, to_status; null for NULL) in
// order.
func DecodeOutcomes(provider, eventID, text string) ([]ledger.WebhookOutcome, error) {
	return decodeList(provider, eventID, "outcomes", text, func(_ int, o storedOutcome) (ledger.WebhookOutcome, error) {
		return Outcome(provider, eventID, o.Target, o.OperationID, o.Disposition, o.From, o.To)
	})
}

// DecodeInboxLists sets e's Targets and Outcomes from the two JSON texts a
// list query reads for an inbox entry (see DecodeTargets, DecodeOutcomes);
// e's Provider and ID name the entry in a corrupt error.
func DecodeInboxLists(e *ledger.InboxEntry, targets, outcomes string) error {
	var err error
	if e.Targets, err = DecodeTargets(e.Provider, e.ID, targets); err != nil {
		return err
	}
	e.Outcomes, err = DecodeOutcomes(e.Provider, e.ID, outcomes)
	return err
}

// decodeList reads text, the JSON array of S the store keeps in field of an
// inbox entry, converting each element with conv; nil for an empty array.
// Text that is not such an array is reported as corrupt.
func decodeList[S, T any](provider, eventID, field, text string, conv func(i int, s S) (T, error)) ([]T, error) {
	var in []S
	if err := json.Unmarshal([]byte(text), &in); err != nil {
		return nil, corruptEntry(provider, eventID, field, err)
	}
	var out []T
	for i, s := range in {
		v, err := conv(i, s)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// ScanOutcome reads one row of a "target, operation_id, disposition,
// from_status, to_status" query of an event's stored outcomes. (pgx scans
// into sql.NullString as database/sql does, so both stores share it.)
func ScanOutcome(row interface{ Scan(dest ...any) error }, provider, eventID string) (ledger.WebhookOutcome, error) {
	var (
		target               int
		opID, disp, from, to sql.NullString
	)
	if err := row.Scan(&target, &opID, &disp, &from, &to); err != nil {
		return ledger.WebhookOutcome{}, err
	}
	return Outcome(provider, eventID, target, opID.String, disp.String, from.String, to.String)
}

// Outcome converts one stored outcome row (empty strings for NULL),
// reporting a value the store cannot have written as corrupt.
func Outcome(provider, eventID string, target int, operationID, disposition, from, to string) (ledger.WebhookOutcome, error) {
	d, err := ledgerdriver.ParseWebhookDisposition(disposition)
	if err != nil {
		return ledger.WebhookOutcome{}, corruptEntry(provider, eventID, fmt.Sprintf("outcomes[target %d].disposition", target), err)
	}
	o := ledger.WebhookOutcome{Target: target, OperationID: operationID, Disposition: d}
	for _, s := range []struct {
		text string
		dst  *ledger.Status
	}{{from, &o.From}, {to, &o.To}} {
		if s.text == "" {
			continue
		}
		if *s.dst, err = ledgerdriver.ParseStatus(s.text); err != nil {
			return ledger.WebhookOutcome{}, corruptEntry(provider, eventID, fmt.Sprintf("outcomes[target %d].status", target), err)
		}
	}
	return o, nil
}

func corruptEntry(provider, eventID, field string, err error) error {
	return fmt.Errorf("%w: webhook %s/%q field %s: %v", ledger.ErrCorrupt, provider, eventID, field, err)
}

// InboxLimit is f.Limit, or ledger.DefaultListLimit when it is zero.
func InboxLimit(f ledger.InboxFilter) int {
	if f.Limit == 0 {
		return ledger.DefaultListLimit
	}
	return f.Limit
}

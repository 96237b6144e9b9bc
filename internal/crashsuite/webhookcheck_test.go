package crashsuite

import (
	"testing"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
)

// checkWebhooks passes a consistent run and names each way the receiving
// side can break exactly-once.
func TestCheckWebhooksCatches(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	// One charge, settled by its event evt_1; the event was delivered
	// twice: its first reply lost in a kill after the commit, then
	// acknowledged as a duplicate. One forged copy was refused.
	base := func() (ledgerView, webhookInput) {
		op := ledger.Operation{ID: "op-1", Key: "op-1", Provider: "stripe", Kind: "charge", Status: ledger.StatusSucceeded, Attempts: 1}
		detail := ledger.WebhookDetail{Provider: "stripe", EventID: "evt_1", Type: "payment_intent.succeeded",
			Effect: ledger.EffectSucceeded, Disposition: ledger.WebhookSettled}.String()
		v := ledgerView{
			ops:  map[string]ledger.Operation{"op-1": op},
			atts: map[string][]ledger.Attempt{"op-1": {{OperationID: "op-1", Number: 1, Key: "op-1", StartedAt: t0}}},
			events: map[string][]ledger.Event{"op-1": {
				{OperationID: "op-1", Seq: 1, At: t0, Kind: ledger.EventLookup},
				{OperationID: "op-1", Seq: 2, At: t0.Add(time.Second), Kind: ledger.EventWebhook, Actor: "webhook:stripe", Detail: detail},
			}},
			inbox: []ledger.InboxEntry{{Provider: "stripe", ID: "evt_1", Type: "payment_intent.succeeded", Outcomes: []ledger.WebhookOutcome{
				{OperationID: "op-1", Disposition: ledger.WebhookSettled, From: ledger.StatusInFlight, To: ledger.StatusSucceeded},
			}}},
		}
		in := webhookInput{
			observed: fakeObserved{
				Webhooks: mocks.WebhookStats{Queued: 1, Delivered: 1, Failed: 1},
				Deliveries: []deliveryAttempt{
					{EventID: "evt_1", At: t0.Add(time.Second), Status: 0},
					{EventID: "evt_1", At: t0.Add(2 * time.Second), Status: 200},
				},
				PostsByKey: map[string]int{"op-1": 1},
			},
			front: frontStats{forged: 1, forgedRejected: 1,
				held: []heldDelivery{{worker: 0, eventID: "evt_1", at: t0.Add(time.Second)}}},
			receivers: map[string]*receiverEvents{"evt_1": {recorded: 1, duplicates: 1}},
		}
		return v, in
	}
	run := func(v ledgerView, in webhookInput) (violations, webhookSummary) {
		var bad violations
		w := checkWebhooks(&bad, v, in)
		return bad, w
	}

	bad, w := run(base())
	if len(bad.order) != 0 {
		t.Fatalf("a consistent run breaks %v", bad.byKind)
	}
	if w.settledByWebhook != 1 || w.settledByCall != 0 || w.duplicates != 1 || w.recorded != 1 || w.unanswered != 1 || w.dispositions["settled"] != 1 {
		t.Fatalf("summary %+v", w)
	}

	for _, c := range []struct {
		want   string
		mutate func(v *ledgerView, in *webhookInput)
	}{
		{"event applied twice (recorded as new by receivers more than once)", func(v *ledgerView, in *webhookInput) {
			in.receivers["evt_1"].recorded = 2
		}},
		{"event applied twice to one operation", func(v *ledgerView, in *webhookInput) {
			e := v.events["op-1"][1]
			e.Seq = 3
			v.events["op-1"] = append(v.events["op-1"], e)
		}},
		{"event recorded twice in the inbox", func(v *ledgerView, in *webhookInput) {
			v.inbox = append(v.inbox, ledger.InboxEntry{Provider: "stripe", ID: "evt_1", Type: "payment_intent.succeeded"})
		}},
		{"acknowledged webhook not in the inbox", func(v *ledgerView, in *webhookInput) {
			in.observed.Webhooks.Queued, in.observed.Webhooks.Delivered = 2, 2
			in.observed.Deliveries = append(in.observed.Deliveries, deliveryAttempt{EventID: "evt_2", At: t0, Status: 200})
		}},
		{"webhook counts disagree", func(v *ledgerView, in *webhookInput) { in.observed.Webhooks.Delivered = 3 }},
		{"webhook never delivered", func(v *ledgerView, in *webhookInput) { in.observed.Webhooks.GaveUp = 1 }},
		{"genuine webhook refused", func(v *ledgerView, in *webhookInput) {
			in.observed.Deliveries = append(in.observed.Deliveries, deliveryAttempt{EventID: "evt_1", At: t0, Status: 400})
		}},
		{"event moved a settled operation", func(v *ledgerView, in *webhookInput) {
			v.inbox[0].Outcomes[0] = ledger.WebhookOutcome{OperationID: "op-1", Disposition: ledger.WebhookStale, From: ledger.StatusSucceeded, To: ledger.StatusPending}
		}},
		{"webhook contradicted the ledger", func(v *ledgerView, in *webhookInput) {
			v.inbox[0].Outcomes[0].Disposition = ledger.WebhookContradiction
		}},
		{"operation left the status a webhook settled it in", func(v *ledgerView, in *webhookInput) {
			op := v.ops["op-1"]
			op.Status = ledger.StatusFailed
			v.ops["op-1"] = op
		}},
		{"inbox outcome without its audit entry", func(v *ledgerView, in *webhookInput) { v.events["op-1"] = v.events["op-1"][:1] }},
		{"forged delivery acknowledged", func(v *ledgerView, in *webhookInput) { in.front.forgedAccepted = []string{"evt_1" + forgedSuffix} }},
		{"forged event recorded", func(v *ledgerView, in *webhookInput) {
			v.inbox = append(v.inbox, ledger.InboxEntry{Provider: "stripe", ID: "evt_1" + forgedSuffix, Type: "payment_intent.succeeded"})
		}},
		{"redelivery after a kill between commit and reply not a duplicate", func(v *ledgerView, in *webhookInput) {
			in.receivers["evt_1"].duplicates = 0
		}},
		{"event whose reply was lost in a kill not delivered again", func(v *ledgerView, in *webhookInput) {
			in.front.held[0].at = t0.Add(3 * time.Second)
		}},
		{"attempt after a webhook settled the operation", func(v *ledgerView, in *webhookInput) {
			op := v.ops["op-1"]
			op.Attempts = 2
			v.ops["op-1"] = op
			v.atts["op-1"] = append(v.atts["op-1"], ledger.Attempt{OperationID: "op-1", Number: 2, Key: "op-1", StartedAt: t0.Add(5 * time.Second)})
		}},
		{"more POSTs than the attempts allow", func(v *ledgerView, in *webhookInput) { in.observed.PostsByKey["op-1"] = maxPostsPerAttempt + 1 }},
		{"POST with the key of no operation", func(v *ledgerView, in *webhookInput) { in.observed.PostsByKey[""] = 1 }},
	} {
		t.Run(c.want, func(t *testing.T) {
			v, in := base()
			c.mutate(&v, &in)
			bad, _ := run(v, in)
			if _, ok := bad.byKind[c.want]; !ok {
				t.Errorf("not reported; got %v", bad.byKind)
			}
		})
	}
}

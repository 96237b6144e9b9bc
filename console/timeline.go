package console

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/payonce/payonce/ledger"
)

// entry is one line of an operation's timeline.
type entry struct {
	At     time.Time
	Kind   string // created, attempt, lookup, webhook, resolution, note, review, finished
	Title  string
	Fields [][2]string // label, value
	Actor  string
	order  int
}

const maxDetail = 2000

func clip(s string) string {
	if len(s) > maxDetail {
		return strings.ToValidUTF8(s[:maxDetail], "") + "…"
	}
	return s
}

// timeline merges the operation's transitions, attempts and audit entries
// in time order (ties: creation, attempts, then entries as recorded).
// Request and result bodies are never shown: a request may carry
// customer data, and the page is for deciding, not for replaying.
func timeline(op ledger.Operation, atts []ledger.Attempt, evs []ledger.Event) []entry {
	var out []entry
	n := 0
	add := func(e entry) {
		n++
		e.order = n
		out = append(out, e)
	}
	add(entry{At: op.CreatedAt, Kind: "created", Title: "created",
		Fields: [][2]string{{"kind", op.Kind}, {"provider", op.Provider}}})
	for _, a := range atts {
		f := [][2]string{{"key", a.Key}}
		outcome := string(a.Outcome)
		if outcome == "" {
			outcome = "no outcome recorded (in flight, or the process died)"
		}
		f = append(f, [2]string{"outcome", outcome})
		if a.HTTPStatus != 0 {
			f = append(f, [2]string{"HTTP status", fmt.Sprint(a.HTTPStatus)})
		}
		if !a.FinishedAt.IsZero() {
			f = append(f, [2]string{"duration", roundDur(a.FinishedAt.Sub(a.StartedAt)).String()})
		}
		replayed := "no"
		if a.Replayed {
			replayed = "yes: the provider replayed a stored answer"
		}
		f = append(f, [2]string{"replayed", replayed})
		if a.ProviderRequestID != "" {
			f = append(f, [2]string{"provider request", a.ProviderRequestID})
		}
		if a.Error != "" {
			f = append(f, [2]string{"error", clip(a.Error)})
		}
		add(entry{At: a.StartedAt, Kind: "attempt", Title: fmt.Sprintf("attempt %d sent", a.Number), Fields: f})
	}
	for _, e := range evs {
		t := entry{At: e.At, Actor: e.Actor}
		switch e.Kind {
		case ledger.EventLookup:
			t.Kind, t.Title = "lookup", "status lookup"
			t.Fields = [][2]string{{"answer and decision", clip(e.Detail)}}
		case ledger.EventWebhook:
			t.Kind, t.Title = "webhook", "provider event"
			var d ledger.WebhookDetail
			if json.Unmarshal([]byte(e.Detail), &d) == nil && d.Type != "" {
				t.Fields = [][2]string{{"type", d.Type}, {"event", d.EventID}, {"effect", string(d.Effect)}, {"disposition", string(d.Disposition)}}
				if d.ProviderRef != "" {
					t.Fields = append(t.Fields, [2]string{"provider ref", d.ProviderRef})
				}
				if d.Detail != "" {
					t.Fields = append(t.Fields, [2]string{"detail", clip(d.Detail)})
				}
			} else {
				t.Fields = [][2]string{{"detail", clip(e.Detail)}}
			}
		case ledger.EventResolution:
			t.Kind, t.Title = "resolution", "resolution"
			var d ledger.ResolutionDetail
			if json.Unmarshal([]byte(e.Detail), &d) == nil && d.Outcome != "" {
				t.Fields = [][2]string{{"outcome", string(d.Outcome)}, {"note", clip(d.Note)}}
				if d.ProviderRef != "" {
					t.Fields = append(t.Fields, [2]string{"provider ref", d.ProviderRef})
				}
				if d.NewKey != "" {
					t.Fields = append(t.Fields, [2]string{"new key", fmt.Sprintf("%s (generation %d)", d.NewKey, d.NewGeneration)})
				}
			} else {
				t.Fields = [][2]string{{"detail", clip(e.Detail)}}
			}
		default:
			t.Kind, t.Title = "note", string(e.Kind)
			t.Fields = [][2]string{{"detail", clip(e.Detail)}}
		}
		add(t)
	}
	if !op.ReviewAt.IsZero() {
		add(entry{At: op.ReviewAt, Kind: "review", Title: "entered manual review",
			Fields: [][2]string{{"code", string(op.ReviewCode)}, {"reason", clip(op.ReviewReason)}}})
	}
	if !op.FinishedAt.IsZero() {
		add(entry{At: op.FinishedAt, Kind: "finished", Title: "settled " + string(op.Status)})
	}
	slices.SortStableFunc(out, func(a, b entry) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return a.order - b.order
	})
	return out
}

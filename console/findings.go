package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/payonce/payonce/ledger"
)

// The audit findings page: the differences payonce's audit (Client.Audit)
// recorded between the ledger and the providers' own records, open ones
// only, each with an acknowledge form for resolvers.

type findingsData struct {
	Provider string
	Class    string
	Classes  []ledger.FindingClass
	Findings []ledger.Finding
	Next     string // the query of the next page, "" on the last
	First    string // the query of the first page, "" on it
	Error    string
}

func (q findingsData) values() url.Values {
	v := url.Values{}
	if q.Provider != "" {
		v.Set("provider", q.Provider)
	}
	if q.Class != "" {
		v.Set("class", q.Class)
	}
	return v
}

func (h *handler) findings(w http.ResponseWriter, r *http.Request) {
	qv := r.URL.Query()
	d := findingsData{Provider: strings.TrimSpace(qv.Get("provider")), Class: strings.TrimSpace(qv.Get("class")), Classes: ledger.FindingClasses}
	f := ledger.FindingFilter{Provider: d.Provider, Open: true, Limit: pageSize + 1}
	switch {
	case len(d.Provider) > 64:
		d.Error = "provider is at most 64 bytes"
	case d.Class != "" && !slices.Contains(ledger.FindingClasses, ledger.FindingClass(d.Class)):
		d.Error = fmt.Sprintf("class %q: use one of %s", d.Class, classesText())
	}
	f.Class = ledger.FindingClass(d.Class)
	if a := qv.Get("after"); a != "" && d.Error == "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || n < 0 {
			d.Error = fmt.Sprintf("after %q: not a finding id", a)
		}
		f.AfterID = n
		d.First = "?" + d.values().Encode()
	}
	if d.Error != "" {
		h.render(w, r, http.StatusBadRequest, "findings", "Audit findings", d)
		return
	}
	fs, err := h.cfg.Store.ListFindings(r.Context(), f)
	if err != nil {
		h.storeError(w, r, "the audit findings", err)
		return
	}
	if len(fs) > pageSize {
		fs = fs[:pageSize]
		v := d.values()
		v.Set("after", strconv.FormatInt(fs[len(fs)-1].ID, 10))
		d.Next = "?" + v.Encode()
	}
	d.Findings = fs
	h.render(w, r, http.StatusOK, "findings", "Audit findings", d)
}

func classesText() string {
	s := make([]string, len(ledger.FindingClasses))
	for i, c := range ledger.FindingClasses {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// ackFinding records the operator's acknowledgement of a finding. ServeHTTP
// has already refused a viewer and a form without a valid CSRF token, as
// for every POST: an acknowledgement closes a money discrepancy for
// everyone watching, so it takes the resolver role the resolve form does.
func (h *handler) ackFinding(w http.ResponseWriter, r *http.Request) {
	back := "/findings"
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		h.fail(w, r, http.StatusNotFound, "404 not found: no finding with id "+strconv.Quote(r.PathValue("id")))
		return
	}
	note := strings.TrimSpace(r.PostForm.Get("note"))
	switch {
	case note == "":
		h.setFlash(w, r, flash{Kind: "error", Text: fmt.Sprintf("finding %d: a note is required: what was done about it", id)})
		h.redirect(w, r, back)
		return
	case len(note) > maxNoteBytes:
		h.setFlash(w, r, flash{Kind: "error", Text: fmt.Sprintf("the note is %d bytes; at most %d", len(note), maxNoteBytes)})
		h.redirect(w, r, back)
		return
	}
	// The actor is the authenticated operator; any "actor" field of the
	// form is ignored.
	actor := state(r).op.Name
	fd, err := h.cfg.Store.AckFinding(r.Context(), ledger.AckFindingParams{ID: id, Actor: actor, Note: note, Now: h.cfg.Now()})
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		h.setFlash(w, r, flash{Kind: "error", Text: fmt.Sprintf("no finding with id %d", id)})
	case errors.Is(err, ledger.ErrInvalid):
		h.setFlash(w, r, flash{Kind: "error", Text: err.Error()})
	case err != nil:
		// A store error's text may name the database: the log has it.
		h.cfg.Logger.Error("console: acknowledging a finding", "id", id, "actor", actor, "err", err)
		h.setFlash(w, r, flash{Kind: "error", Text: fmt.Sprintf("acknowledging finding %d failed (the ledger answered an error, see the service's log)", id)})
	case fd.AckedBy != actor || fd.AckNote != note:
		// The store keeps the first acknowledgement.
		h.setFlash(w, r, flash{Kind: "error", Text: fmt.Sprintf("finding %d was already acknowledged by %s", id, fd.AckedBy)})
	default:
		h.cfg.Logger.Info("console: finding acknowledged", "id", id, "actor", actor)
		h.setFlash(w, r, flash{Kind: "ok", Text: fmt.Sprintf("finding %d (%s, %s) is acknowledged", id, fd.Provider, fd.Class)})
	}
	h.redirect(w, r, back)
}

// openFindings is the number of open findings in s.
func openFindings(s ledger.Stats) int64 {
	var n int64
	for _, c := range s.Findings {
		n += c.Open
	}
	return n
}

package console

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// page is what every template gets.
type page struct {
	Title string
	Op    Operator
	Base  string
	CSRF  string
	Flash *flash
	Now   time.Time
	D     any
}

var funcs = template.FuncMap{
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000Z")
	},
	"age": func(now, t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return roundDur(now.Sub(t)).String()
	},
	"dur":  func(d time.Duration) string { return roundDur(d).String() },
	"path": url.PathEscape,
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour || d <= -time.Hour:
		return d.Round(time.Minute)
	case d >= time.Second || d <= -time.Second:
		return d.Round(time.Second)
	default:
		return d.Round(time.Millisecond)
	}
}

func (h *handler) render(w http.ResponseWriter, r *http.Request, status int, name, title string, d any) {
	st := state(r)
	p := page{Title: title, Op: st.op, Base: st.base, CSRF: st.csrf, Now: h.cfg.Now(), D: d}
	if r.Method == http.MethodGet {
		p.Flash = h.takeFlash(w, r)
	}
	var b strings.Builder
	if err := h.pages[name].Execute(&b, p); err != nil {
		h.cfg.Logger.Error("console: rendering a page", "page", name, "err", err)
		http.Error(w, "500 internal error: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail answers an error page (with the layout, so the operator can go on).
func (h *handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, r, status, "error", http.StatusText(status), msg)
}

func (h *handler) storeError(w http.ResponseWriter, r *http.Request, what string, err error) {
	if errors.Is(err, ledger.ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, "404 not found: "+what)
		return
	}
	if errors.Is(err, ledger.ErrInvalid) {
		h.fail(w, r, http.StatusBadRequest, "400 bad request: "+what+": "+err.Error())
		return
	}
	h.cfg.Logger.Error("console: reading the ledger", "what", what, "err", err)
	h.fail(w, r, http.StatusInternalServerError, "500: reading the ledger failed ("+what+"); see the service's log")
}

// redirect answers 303 to a path of the console.
func (h *handler) redirect(w http.ResponseWriter, r *http.Request, rel string) {
	http.Redirect(w, r, state(r).base+rel, http.StatusSeeOther)
}

// ---- overview ----

type overviewData struct {
	Stats ledger.Stats
	// OpenFindings is the number of open audit findings (Stats.Findings).
	OpenFindings int64
	Inbox        []inboxRow
	InboxFrom    time.Time
}

func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	now := h.cfg.Now()
	since := now.Add(-24 * time.Hour)
	s, inbox, err := h.stats(r.Context(), since)
	if err != nil {
		h.storeError(w, r, "stats", err)
		return
	}
	h.render(w, r, http.StatusOK, "overview", "Overview", overviewData{Stats: s, OpenFindings: openFindings(s), Inbox: inbox, InboxFrom: since})
}

// ---- review queue ----

type reviewQuery struct {
	Provider, Kind, Code, OlderThan string
	filter                          ledger.ReviewFilter
}

// parseReviewQuery reads the queue's filter from a query or a form.
func (h *handler) parseReviewQuery(v url.Values) (reviewQuery, error) {
	q := reviewQuery{Provider: strings.TrimSpace(v.Get("provider")), Kind: strings.TrimSpace(v.Get("kind")),
		Code: strings.TrimSpace(v.Get("code")), OlderThan: strings.TrimSpace(v.Get("older_than"))}
	q.filter = ledger.ReviewFilter{Provider: q.Provider, Kind: q.Kind}
	if q.Code != "" {
		if !slices.Contains(ledger.ReviewCodes, ledger.ReviewCode(q.Code)) {
			return q, fmt.Errorf("code %q: use one of %s", q.Code, codesText())
		}
		q.filter.Code = ledger.ReviewCode(q.Code)
	}
	if q.OlderThan != "" {
		d, err := parseAge(q.OlderThan)
		if err != nil {
			return q, err
		}
		q.filter.EnteredBefore = h.cfg.Now().Add(-d)
	}
	if len(q.Provider) > 64 || len(q.Kind) > 64 {
		return q, errors.New("provider and kind are at most 64 bytes")
	}
	return q, nil
}

func codesText() string {
	s := make([]string, len(ledger.ReviewCodes))
	for i, c := range ledger.ReviewCodes {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// parseAge reads "90m", "2h", "3d".
func parseAge(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err == nil && days >= 0 && days <= 3650 {
			return time.Duration(days) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return d, nil
	}
	return 0, fmt.Errorf("older_than %q: use a duration such as 30m, 2h or 3d", s)
}

func (q reviewQuery) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"provider": q.Provider, "kind": q.Kind, "code": q.Code, "older_than": q.OlderThan} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// cursor is a keyset position in the queue's order (ReviewAt, ID).
func cursor(op ledger.Operation) string {
	return strconv.FormatInt(op.ReviewAt.UnixMicro(), 10) + "." + op.ID
}

func parseCursor(s string) (time.Time, string, error) {
	m, id, ok := strings.Cut(s, ".")
	us, err := strconv.ParseInt(m, 10, 64)
	if !ok || err != nil || id == "" {
		return time.Time{}, "", fmt.Errorf("after %q: not a position of the queue", s)
	}
	return time.UnixMicro(us).UTC(), id, nil
}

type reviewData struct {
	Q        reviewQuery
	Ops      []ledger.Operation
	Next     string // the query of the next page, "" on the last
	First    string // the query of the first page, "" on it
	Codes    []ledger.ReviewCode
	Outcomes []ledger.ResolutionOutcome
	Error    string
}

func (h *handler) review(w http.ResponseWriter, r *http.Request) {
	q, err := h.parseReviewQuery(r.URL.Query())
	d := reviewData{Q: q, Codes: ledger.ReviewCodes, Outcomes: []ledger.ResolutionOutcome{ledger.ResolveFailed, ledger.ResolveResend}}
	if err != nil {
		d.Error = err.Error()
		h.render(w, r, http.StatusBadRequest, "review", "Review queue", d)
		return
	}
	var afterAt time.Time
	var afterID string
	if a := r.URL.Query().Get("after"); a != "" {
		if afterAt, afterID, err = parseCursor(a); err != nil {
			d.Error = err.Error()
			h.render(w, r, http.StatusBadRequest, "review", "Review queue", d)
			return
		}
		d.First = q.values().Encode()
		if d.First == "" {
			d.First = "?"
		} else {
			d.First = "?" + d.First
		}
	}
	ops, err := h.listReview(r.Context(), q.filter, afterAt, afterID, pageSize+1)
	if err != nil {
		h.storeError(w, r, "the review queue", err)
		return
	}
	if len(ops) > pageSize {
		ops = ops[:pageSize]
		v := q.values()
		v.Set("after", cursor(ops[len(ops)-1]))
		d.Next = "?" + v.Encode()
	}
	d.Ops = ops
	h.render(w, r, http.StatusOK, "review", "Review queue", d)
}

// ---- operation ----

type opData struct {
	Op        ledger.Operation
	OrderID   string
	RefundNo  string
	WindowOn  bool
	Left      time.Duration
	Timeline  []entry
	ReviewAt  string // the review's entry time (µs), sent back by the form
	CanAct    bool   // in review: the form is shown (to a resolver)
	NoClient  string // why it cannot be resolved here, if so
	Outcomes  []ledger.ResolutionOutcome
	Resolvers bool
}

func (h *handler) operation(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	op, atts, err := h.cfg.Store.Get(r.Context(), id)
	if err != nil {
		h.storeError(w, r, "no operation with id "+strconv.Quote(id), err)
		return
	}
	evs, err := h.cfg.Store.Events(r.Context(), id)
	if err != nil {
		h.storeError(w, r, "the history of "+strconv.Quote(id), err)
		return
	}
	d := opData{Op: op, Timeline: timeline(op, atts, evs),
		Outcomes: []ledger.ResolutionOutcome{ledger.ResolveFailed, ledger.ResolveSucceeded, ledger.ResolveResend}}
	if len(op.References) > 0 {
		d.OrderID = op.References[0]
	}
	if op.Kind == string(payonce.KindRefund) && len(op.References) > 1 {
		d.RefundNo = op.References[1]
	}
	if !op.KeyExpiresAt.IsZero() {
		d.WindowOn, d.Left = true, op.KeyExpiresAt.Sub(h.cfg.Now())
	}
	d.CanAct = op.Status == ledger.StatusManualReview && !op.Tombstone
	d.ReviewAt = strconv.FormatInt(op.ReviewAt.UnixMicro(), 10)
	if d.CanAct && h.client(op.Provider) == nil {
		d.NoClient = noClientText(op.Provider)
	}
	h.render(w, r, http.StatusOK, "op", "Operation "+op.ID, d)
}

func noClientText(provider string) string {
	return "this console has no client for provider " + strconv.Quote(provider) + ": it cannot resolve its operations (configure one in console.Config.Clients, or use `payonce review resolve`)"
}

// ---- resolve ----

func (h *handler) resolve(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	back := "/ops/" + url.PathEscape(id)
	out, note, ref, msg := readResolveForm(r)
	if msg != "" {
		h.setFlash(w, r, flash{Kind: "error", Text: msg})
		h.redirect(w, r, back)
		return
	}
	// The form names the review it was shown for (hidden review_at, the
	// review's entry time in µs), as bulk apply does: a form submitted
	// again (back button, resubmit) or long after, when the operation has
	// left review and come back, must not decide a review the operator
	// never saw.
	us, perr := strconv.ParseInt(r.PostForm.Get("review_at"), 10, 64)
	if perr != nil {
		h.setFlash(w, r, flash{Kind: "error", Text: "the form does not say which review it was shown for; reload the page and resolve again"})
		h.redirect(w, r, back)
		return
	}
	if cur, _, err := h.cfg.Store.Get(r.Context(), id); err == nil && cur.Status == ledger.StatusManualReview && cur.ReviewAt.UnixMicro() != us {
		h.setFlash(w, r, flash{Kind: "error", Text: fmt.Sprintf("operation %s left review and came back since this page was loaded; nothing was recorded: look at it again", id)})
		h.redirect(w, r, back)
		return
	}
	text, ok := h.resolveOne(r, id, out, note, ref)
	kind := "ok"
	if !ok {
		kind = "error"
	}
	h.setFlash(w, r, flash{Kind: kind, Text: text})
	h.redirect(w, r, back)
}

// readResolveForm reads and checks outcome, note and provider_ref. Any
// "actor" field is ignored: the actor is the authenticated operator.
func readResolveForm(r *http.Request) (ledger.ResolutionOutcome, string, string, string) {
	out := ledger.ResolutionOutcome(r.PostForm.Get("outcome"))
	note := strings.TrimSpace(r.PostForm.Get("note"))
	ref := strings.TrimSpace(r.PostForm.Get("provider_ref"))
	switch {
	case out != ledger.ResolveSucceeded && out != ledger.ResolveFailed && out != ledger.ResolveResend:
		return "", "", "", "outcome: choose succeeded, failed or resend"
	case note == "":
		return "", "", "", "a note is required: why, e.g. what the provider's dashboard shows"
	case len(note) > maxNoteBytes:
		return "", "", "", fmt.Sprintf("the note is %d bytes; at most %d", len(note), maxNoteBytes)
	case out == ledger.ResolveSucceeded && ref == "":
		return "", "", "", "a provider reference is required with succeeded: the provider's id of the object that moved the money"
	case len(ref) > 256:
		return "", "", "", "the provider reference is at most 256 bytes"
	}
	return out, note, ref, ""
}

// resolveOne resolves one operation through its provider's Client and
// says what happened, as `payonce review resolve` does.
func (h *handler) resolveOne(r *http.Request, id string, out ledger.ResolutionOutcome, note, ref string) (string, bool) {
	ctx := r.Context()
	cur, _, err := h.cfg.Store.Get(ctx, id)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return fmt.Sprintf("no operation with id %q", id), false
	case err != nil:
		h.cfg.Logger.Error("console: reading an operation", "id", id, "err", err)
		return "reading operation " + id + " failed; see the service's log", false
	case cur.Status != ledger.StatusManualReview:
		return fmt.Sprintf("operation %s is %s, not in manual review: nothing to resolve", id, cur.Status), false
	}
	c := h.client(cur.Provider)
	if c == nil {
		return noClientText(cur.Provider), false
	}
	actor := state(r).op.Name
	// Client.Resolve, not the ledger: before a resend it asks the provider
	// under every key the operation carried, and refuses unless it
	// positively says no earlier one moved money.
	op, err := c.Resolve(ctx, payonce.ResolveParams{OperationID: id, Outcome: out, Actor: actor, Note: note, ProviderRef: ref})
	switch {
	case errors.Is(err, payonce.ErrResendRefused):
		h.cfg.Logger.Info("console: resend refused", "id", id, "actor", actor)
		return fmt.Sprintf("%s; nothing was recorded and operation %s stays in review", strings.TrimPrefix(err.Error(), "payonce: "), id), false
	case errors.Is(err, ledger.ErrNotInReview):
		if now, _, gerr := h.cfg.Store.Get(ctx, id); gerr == nil {
			return fmt.Sprintf("operation %s is %s, not in manual review: nothing to resolve", id, now.Status), false
		}
		return err.Error(), false
	case errors.Is(err, ledger.ErrStateConflict):
		// Another entry reached its history (a webhook, another operator)
		// while the provider was asked: the store refused the decision
		// taken on the older history.
		return fmt.Sprintf("operation %s changed while this was decided (a new entry in its history); nothing was recorded: look at it again", id), false
	case errors.Is(err, payonce.ErrInvalid), errors.Is(err, ledger.ErrInvalid):
		return strings.TrimPrefix(err.Error(), "payonce: "), false
	case err != nil:
		// A store or transport error: its text may name the database's
		// host, user or SQL, which the page does not show; the log has it.
		// Whether the resolution was committed is unknown (a lost answer).
		h.cfg.Logger.Error("console: resolving", "id", id, "actor", actor, "err", err)
		return fmt.Sprintf("resolving operation %s failed (the ledger answered an error, see the service's log); reload it to see whether the resolution was recorded", id), false
	}
	h.cfg.Logger.Info("console: resolved", "id", id, "actor", actor, "outcome", string(out))
	msg := fmt.Sprintf("operation %s is now %s", op.ID, op.Status)
	if out == ledger.ResolveResend {
		msg += fmt.Sprintf("; it will be sent under the new key %s (generation %d) by the reconciler", op.Key, op.Generation)
	}
	return msg, true
}

// ---- search ----

type searchData struct {
	Q    string
	Hits []ledger.Operation
	Note string
}

func (h *handler) search(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	d := searchData{Q: q}
	if q == "" {
		h.render(w, r, http.StatusOK, "search", "Search", d)
		return
	}
	if len(q) > maxQueryBytes {
		d.Note = fmt.Sprintf("the search text is %d bytes; at most %d", len(q), maxQueryBytes)
		h.render(w, r, http.StatusBadRequest, "search", "Search", d)
		return
	}
	hits, err := h.find(r, q)
	if err != nil {
		h.storeError(w, r, "search", err)
		return
	}
	if len(hits) == 1 {
		h.redirect(w, r, "/ops/"+url.PathEscape(hits[0].ID))
		return
	}
	d.Hits = hits
	if len(h.clients) == 0 {
		d.Note = "no client is configured, so order ids are not searched (an order id becomes operation ids through each client's provider)"
	}
	h.render(w, r, http.StatusOK, "search", "Search", d)
}

// find looks q up as an operation id, an order id (through payonce.Identity
// for each configured client's provider), a provider reference and a key.
func (h *handler) find(r *http.Request, q string) ([]ledger.Operation, error) {
	ctx := r.Context()
	seen := map[string]bool{}
	var hits []ledger.Operation
	add := func(op ledger.Operation) {
		if !seen[op.ID] {
			seen[op.ID] = true
			hits = append(hits, op)
		}
	}
	get := func(id string) (bool, error) {
		op, _, err := h.cfg.Store.Get(ctx, id)
		switch {
		case errors.Is(err, ledger.ErrNotFound), errors.Is(err, ledger.ErrInvalid):
			return false, nil
		case err != nil:
			return false, err
		}
		add(op)
		return true, nil
	}
	if _, err := get(q); err != nil {
		return nil, err
	}
	providers := make([]string, 0, len(h.clients))
	for p := range h.clients {
		providers = append(providers, p)
	}
	slices.Sort(providers)
	for _, p := range providers {
		for _, k := range []payonce.Kind{payonce.KindCharge, payonce.KindCapture, payonce.KindCancel} {
			id, err := payonce.Identity{Provider: p, Kind: k, References: []string{q}}.OperationID()
			if err != nil {
				break // not an order id this provider can key
			}
			if _, err := get(id); err != nil {
				return nil, err
			}
		}
		// Refunds are numbered from 1 without gaps: stop at the first missing.
		for n := 1; n <= 1000; n++ {
			id, err := payonce.Identity{Provider: p, Kind: payonce.KindRefund, References: []string{q, strconv.Itoa(n)}}.OperationID()
			if err != nil {
				break
			}
			found, err := get(id)
			if err != nil {
				return nil, err
			}
			if !found {
				break
			}
		}
	}
	more, err := h.findByRefOrKey(ctx, q)
	if err != nil {
		return nil, err
	}
	for _, op := range more {
		add(op)
	}
	return hits, nil
}

// ---- bulk ----

type bulkItem struct {
	Op     ledger.Operation
	Cursor string // id|ReviewAt, what the apply checks is unchanged
	Will   string
	OK     bool
}

type bulkData struct {
	Q       reviewQuery
	Outcome ledger.ResolutionOutcome
	Note    string
	Items   []bulkItem
	More    bool
	Error   string
}

func (h *handler) readBulkForm(r *http.Request) (ledger.ResolutionOutcome, string, string) {
	out := ledger.ResolutionOutcome(r.PostForm.Get("outcome"))
	note := strings.TrimSpace(r.PostForm.Get("note"))
	switch {
	case out == ledger.ResolveSucceeded:
		return "", "", "bulk resolve offers failed and resend: succeeded needs each operation's own provider reference, so resolve those one by one"
	case out != ledger.ResolveFailed && out != ledger.ResolveResend:
		return "", "", "outcome: choose failed or resend"
	case note == "":
		return "", "", "a note is required: why, e.g. \"stored error, nothing found at the provider\""
	case len(note) > maxNoteBytes:
		return "", "", fmt.Sprintf("the note is %d bytes; at most %d", len(note), maxNoteBytes)
	}
	return out, note, ""
}

func (h *handler) bulkPreview(w http.ResponseWriter, r *http.Request) {
	q, err := h.parseReviewQuery(r.PostForm)
	d := bulkData{Q: q}
	if err != nil {
		d.Error = err.Error()
		h.render(w, r, http.StatusBadRequest, "bulk", "Bulk resolve: preview", d)
		return
	}
	out, note, msg := h.readBulkForm(r)
	d.Outcome, d.Note = out, note
	if msg != "" {
		d.Error = msg
		h.render(w, r, http.StatusBadRequest, "bulk", "Bulk resolve: preview", d)
		return
	}
	ops, err := h.listReview(r.Context(), q.filter, time.Time{}, "", bulkMax+1)
	if err != nil {
		h.storeError(w, r, "the review queue", err)
		return
	}
	if len(ops) > bulkMax {
		ops, d.More = ops[:bulkMax], true
	}
	for _, op := range ops {
		it := bulkItem{Op: op, Cursor: op.ID + "|" + strconv.FormatInt(op.ReviewAt.UnixMicro(), 10), OK: true}
		switch {
		case h.client(op.Provider) == nil:
			it.Will, it.OK = "nothing: "+noClientText(op.Provider), false
		case op.ReviewCode == ledger.ReviewCodeDuplicated:
			// Money moved more than once: neither "failed" (it did move)
			// nor a resend (a third movement) is right, and a filter must
			// not sweep it into either. One by one, after a refund.
			it.Will, it.OK = "nothing: "+duplicatedText, false
		case out == ledger.ResolveFailed:
			it.Will = "recorded failed (the money did not move); it leaves the queue"
		default:
			it.Will = fmt.Sprintf("the provider is asked under every key first; if it shows that no earlier key moved money, sent again under generation %d, else refused and left in review", op.Generation+1)
		}
		d.Items = append(d.Items, it)
	}
	h.render(w, r, http.StatusOK, "bulk", "Bulk resolve: preview", d)
}

// duplicatedText says why bulk resolution leaves a duplicated operation out.
const duplicatedText = "it is in review because the money moved more than once (duplicated): refund the extra payment at the provider, then resolve it on its own page as succeeded"

type bulkResult struct {
	ID   string
	Text string
	OK   bool
}

func (h *handler) bulkApply(w http.ResponseWriter, r *http.Request) {
	out, note, msg := h.readBulkForm(r)
	if msg != "" {
		h.fail(w, r, http.StatusBadRequest, msg)
		return
	}
	items := r.PostForm["op"]
	if len(items) == 0 || len(items) > bulkMax {
		h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("bulk apply takes 1 to %d previewed operations", bulkMax))
		return
	}
	var res []bulkResult
	seen := map[string]bool{}
	for _, it := range items {
		id, at, ok := strings.Cut(it, "|")
		if r.Context().Err() != nil {
			// The request's time ran out (30 s; a resend asks the provider
			// first): the rest is not tried rather than each failing with
			// an unclear error.
			res = append(res, bulkResult{ID: id, Text: "not tried: this request ran out of time; preview again for the rest"})
			continue
		}
		us, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil || id == "" || seen[id] {
			res = append(res, bulkResult{ID: id, Text: "skipped: not an item of the preview"})
			continue
		}
		seen[id] = true
		cur, _, err := h.cfg.Store.Get(r.Context(), id)
		if err == nil && cur.Status == ledger.StatusManualReview && cur.ReviewCode == ledger.ReviewCodeDuplicated {
			// Checked again here, not only in the preview: the list of ids
			// is the browser's, and Client.Resolve records "failed" on a
			// duplicated operation, whose money did move.
			res = append(res, bulkResult{ID: id, Text: "skipped: " + duplicatedText})
			continue
		}
		if err == nil && cur.Status == ledger.StatusManualReview && cur.ReviewAt.UnixMicro() != us {
			// It left review and came back since the preview: what the
			// operator approved was another review.
			res = append(res, bulkResult{ID: id, Text: "skipped: its review changed since the preview; look at it again"})
			continue
		}
		// Each item is checked on its own, by Client.Resolve, exactly as a
		// single resolution.
		text, ok := h.resolveOne(r, id, out, note, "")
		res = append(res, bulkResult{ID: id, Text: text, OK: ok})
	}
	h.render(w, r, http.StatusOK, "bulkresult", "Bulk resolve: results", res)
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

func runOps(ctx context.Context, a *App, args []string) error {
	return runSubcommand(ctx, a, args, "ops", "payonce ops list [flags] | payonce ops show ID [flags]",
		subcommand{"list", runOpsList}, subcommand{"show", runOpsShow})
}

func runOpsList(ctx context.Context, a *App, args []string) error {
	f := newFlags("ops list", "payonce ops list [--status S] [--provider P] [--kind K] [--limit N] [--after ID] [--json]",
		"Lists operations ordered by id: a table, or one JSON object per line with --json.")
	var asJSON bool
	lf := addLedgerFlags(f, &asJSON, "print one JSON object per operation")
	var status, provider, kind, after string
	var limit int
	f.StringVar(&status, "status", "", "only operations in status `S`: pending, in_flight, unknown, succeeded,\nfailed or manual_review")
	f.StringVar(&provider, "provider", "", "only operations of provider `P`")
	f.StringVar(&kind, "kind", "", "only operations of kind `K`: charge, capture, cancel or refund")
	f.IntVar(&limit, "limit", 100, "at most `N` operations")
	f.StringVar(&after, "after", "", "start after this operation `ID` (paging)")
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	filter := ledger.ListFilter{Provider: provider, AfterID: after, Limit: limit}
	st, err := parseOptional("status", status, ledgerdriver.ParseStatus, "pending, in_flight, unknown, succeeded, failed or manual_review")
	if err != nil {
		return err
	}
	filter.Status = st
	k, err := parseKindFlag(kind)
	if err != nil {
		return err
	}
	filter.Kind = string(k)
	l, err := a.openListing(ctx, lf, limit)
	if err != nil {
		return err
	}
	defer l.Close()
	ops, err := l.store.List(ctx, filter)
	if err != nil {
		return withCode(ExitError, fmt.Errorf("listing operations: %w", err))
	}
	table, err := writeOps(a.Stdout, ops, asJSON, "no operations",
		func(op ledger.Operation) any { return listJSON(op) },
		"ID\tPROVIDER\tKIND\tREFERENCES\tSTATUS\tPROVIDER REF\tATTEMPTS\tKEY EXPIRES\tNEXT CHECK",
		func(w io.Writer, op ledger.Operation) {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", op.ID, op.Provider, op.Kind, strings.Join(op.References, "/"),
				op.Status, dash(op.ProviderRef), op.Attempts, timeText(op.KeyExpiresAt), timeText(op.NextCheckAt))
		})
	if err != nil || !table {
		return err
	}
	if len(ops) == filter.Limit {
		fmt.Fprintf(a.Stdout, "(%d shown, the --limit; the next page: --after %s)\n", len(ops), ops[len(ops)-1].ID)
	}
	return nil
}

// writeOps writes ops as one JSON object per line (line) with asJSON, as
// none when there are none, or else as a table: header and one row per op.
// table reports that the table was written.
func writeOps(w io.Writer, ops []ledger.Operation, asJSON bool, none string, line func(ledger.Operation) any,
	header string, row func(io.Writer, ledger.Operation)) (table bool, err error) {
	if asJSON {
		for _, op := range ops {
			if err := writeJSON(w, line(op)); err != nil {
				return false, err
			}
		}
		return false, nil
	}
	if len(ops) == 0 {
		fmt.Fprintln(w, none)
		return false, nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, op := range ops {
		row(tw, op)
	}
	return true, tw.Flush()
}

// opListJSON is one line of "ops list --json".
type opListJSON struct {
	ID           string     `json:"id"`
	Key          string     `json:"key"`
	Provider     string     `json:"provider"`
	Kind         string     `json:"kind"`
	References   []string   `json:"references"`
	Status       string     `json:"status"`
	ProviderRef  string     `json:"provider_ref"`
	Attempts     int        `json:"attempts"`
	KeyExpiresAt *time.Time `json:"key_expires_at"`
	NextCheckAt  *time.Time `json:"next_check_at"`
}

func listJSON(op ledger.Operation) opListJSON {
	return opListJSON{ID: op.ID, Key: op.Key, Provider: op.Provider, Kind: op.Kind, References: op.References,
		Status: string(op.Status), ProviderRef: op.ProviderRef, Attempts: op.Attempts,
		KeyExpiresAt: timeJSON(op.KeyExpiresAt), NextCheckAt: timeJSON(op.NextCheckAt)}
}

// opJSON is an operation in full, for "ops show --json".
type opJSON struct {
	ID             string          `json:"id"`
	Key            string          `json:"key"`
	Provider       string          `json:"provider"`
	Kind           string          `json:"kind"`
	References     []string        `json:"references"`
	Generation     int             `json:"generation"`
	Fingerprint    string          `json:"fingerprint"`
	Request        json.RawMessage `json:"request"`
	Status         string          `json:"status"`
	ProviderRef    string          `json:"provider_ref"`
	Result         json.RawMessage `json:"result"`
	Attempts       int             `json:"attempts"`
	KeyTTLSeconds  float64         `json:"key_ttl_seconds"`
	WindowStart    *time.Time      `json:"window_start"`
	KeyExpiresAt   *time.Time      `json:"key_expires_at"`
	LeaseOwner     string          `json:"lease_owner"`
	LeaseExpiresAt *time.Time      `json:"lease_expires_at"`
	NextCheckAt    *time.Time      `json:"next_check_at"`
	ReviewCode     string          `json:"review_code"`
	ReviewReason   string          `json:"review_reason"`
	ReviewAt       *time.Time      `json:"review_at"`
	Resolution     *resolutionJSON `json:"resolution"`
	CreatedAt      *time.Time      `json:"created_at"`
	UpdatedAt      *time.Time      `json:"updated_at"`
	FinishedAt     *time.Time      `json:"finished_at"`
}

type resolutionJSON struct {
	Actor   string     `json:"actor"`
	Note    string     `json:"note"`
	Outcome string     `json:"outcome"`
	At      *time.Time `json:"at"`
}

type attemptJSON struct {
	Number            int        `json:"number"`
	Key               string     `json:"key"`
	StartedAt         *time.Time `json:"started_at"`
	FinishedAt        *time.Time `json:"finished_at"`
	MayHaveReached    bool       `json:"may_have_reached"`
	Outcome           string     `json:"outcome"`
	HTTPStatus        int        `json:"http_status"`
	ProviderRequestID string     `json:"provider_request_id"`
	Error             string     `json:"error"`
}

type eventJSON struct {
	Seq    int        `json:"seq"`
	At     *time.Time `json:"at"`
	Kind   string     `json:"kind"`
	Actor  string     `json:"actor"`
	Detail string     `json:"detail"`
}

func fullJSON(op ledger.Operation) opJSON {
	o := opJSON{
		ID: op.ID, Key: op.Key, Provider: op.Provider, Kind: op.Kind, References: op.References,
		Generation: op.Generation, Fingerprint: op.Fingerprint, Request: rawJSON(op.Request),
		Status: string(op.Status), ProviderRef: op.ProviderRef, Result: rawJSON(op.Result), Attempts: op.Attempts,
		KeyTTLSeconds: op.KeyTTL.Seconds(), WindowStart: timeJSON(op.WindowStart), KeyExpiresAt: timeJSON(op.KeyExpiresAt),
		LeaseOwner: op.LeaseOwner, LeaseExpiresAt: timeJSON(op.LeaseExpiresAt), NextCheckAt: timeJSON(op.NextCheckAt),
		ReviewCode: string(op.ReviewCode), ReviewReason: op.ReviewReason, ReviewAt: timeJSON(op.ReviewAt),
		CreatedAt: timeJSON(op.CreatedAt), UpdatedAt: timeJSON(op.UpdatedAt), FinishedAt: timeJSON(op.FinishedAt),
	}
	if r := op.Resolution; r != nil {
		o.Resolution = &resolutionJSON{Actor: r.Actor, Note: r.Note, Outcome: string(r.Outcome), At: timeJSON(r.At)}
	}
	return o
}

// rawJSON passes stored JSON through, or null when it is empty or invalid.
func rawJSON(b []byte) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return json.RawMessage("null")
	}
	return json.RawMessage(b)
}

func timeJSON(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runOpsShow(ctx context.Context, a *App, args []string) error {
	f := newFlags("ops show", "payonce ops show ID [--json]",
		"Shows one operation with its attempts and its audit events (status lookups,\nresolutions).")
	var asJSON bool
	lf := addLedgerFlags(f, &asJSON, "print one JSON object: operation, attempts, events")
	pos, err := f.parseArgs(a, args, "ID")
	if err != nil {
		return err
	}
	l, err := a.openLedger(ctx, lf, openExisting)
	if err != nil {
		return err
	}
	defer l.Close()
	op, atts, err := l.store.Get(ctx, pos[0])
	if errors.Is(err, ledger.ErrNotFound) {
		return usageErrorf("no operation with id %q in %s (\"payonce ops list\" shows the ids)", pos[0], l.desc)
	}
	if err != nil {
		return fmt.Errorf("reading operation %s: %w", pos[0], err)
	}
	events, err := l.store.Events(ctx, op.ID)
	if err != nil {
		return fmt.Errorf("reading the events of operation %s: %w", op.ID, err)
	}
	if asJSON {
		out := struct {
			Operation opJSON        `json:"operation"`
			Attempts  []attemptJSON `json:"attempts"`
			Events    []eventJSON   `json:"events"`
		}{Operation: fullJSON(op), Attempts: []attemptJSON{}, Events: []eventJSON{}}
		for _, at := range atts {
			out.Attempts = append(out.Attempts, attemptJSON{Number: at.Number, Key: at.Key, StartedAt: timeJSON(at.StartedAt),
				FinishedAt: timeJSON(at.FinishedAt), MayHaveReached: at.MayHaveReached, Outcome: string(at.Outcome),
				HTTPStatus: at.HTTPStatus, ProviderRequestID: at.ProviderRequestID, Error: at.Error})
		}
		for _, e := range events {
			out.Events = append(out.Events, eventJSON{Seq: e.Seq, At: timeJSON(e.At), Kind: string(e.Kind), Actor: e.Actor, Detail: e.Detail})
		}
		return writeJSON(a.Stdout, out)
	}
	printOperation(a.Stdout, op, atts, events)
	return nil
}

func printOperation(w io.Writer, op ledger.Operation, atts []ledger.Attempt, events []ledger.Event) {
	fmt.Fprintf(w, "operation %s\n", op.ID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "  %s\t%s\n", k, v) }
	row("identity", fmt.Sprintf("%s %s %s", op.Provider, op.Kind, strings.Join(op.References, "/")))
	row("status", string(op.Status))
	row("key", fmt.Sprintf("%s (generation %d)", op.Key, op.Generation))
	row("provider ref", dash(op.ProviderRef))
	row("attempts", fmt.Sprint(op.Attempts))
	row("key window", fmt.Sprintf("%s .. %s (key TTL %s)", timeText(op.WindowStart), timeText(op.KeyExpiresAt), fmtDuration(op.KeyTTL)))
	row("next check", timeText(op.NextCheckAt))
	if op.LeaseOwner != "" {
		row("lease", fmt.Sprintf("%s until %s", op.LeaseOwner, timeText(op.LeaseExpiresAt)))
	}
	if op.ReviewReason != "" {
		row("review", fmt.Sprintf("%s: %s (since %s)", op.ReviewCode, op.ReviewReason, timeText(op.ReviewAt)))
	}
	if r := op.Resolution; r != nil {
		row("resolution", fmt.Sprintf("%s by %s at %s: %s", r.Outcome, r.Actor, timeText(r.At), r.Note))
	}
	row("request", string(op.Request))
	if len(op.Result) > 0 {
		row("result", string(op.Result))
	}
	row("created", timeText(op.CreatedAt))
	row("updated", timeText(op.UpdatedAt))
	row("finished", timeText(op.FinishedAt))
	_ = tw.Flush()

	fmt.Fprintf(w, "\nattempts (%d)\n", len(atts))
	if len(atts) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  #\tSTARTED\tFINISHED\tOUTCOME\tHTTP\tMAY HAVE REACHED\tREQUEST ID\tERROR")
		for _, at := range atts {
			outcome := string(at.Outcome)
			if outcome == "" {
				outcome = "(none recorded)"
			}
			httpStatus := "-"
			if at.HTTPStatus != 0 {
				httpStatus = fmt.Sprint(at.HTTPStatus)
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%v\t%s\t%s\n", at.Number, timeText(at.StartedAt), timeText(at.FinishedAt),
				outcome, httpStatus, at.MayHaveReached, dash(at.ProviderRequestID), oneLine(at.Error))
		}
		_ = tw.Flush()
		if atts[len(atts)-1].Key != op.Key || atts[0].Key != op.Key {
			fmt.Fprintln(w, "  (attempts carried keys of earlier generations: see --json)")
		}
	}

	fmt.Fprintf(w, "\nevents (%d)\n", len(events))
	if len(events) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  #\tAT\tKIND\tACTOR\tDETAIL")
		for _, e := range events {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", e.Seq, timeText(e.At), e.Kind, e.Actor, oneLine(e.Detail))
		}
		_ = tw.Flush()
	}
}

// oneLine keeps a table cell on one line and short.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return dash(s)
}

func runReview(ctx context.Context, a *App, args []string) error {
	return runSubcommand(ctx, a, args, "review",
		"payonce review list [flags] | payonce review resolve ID --outcome succeeded|failed|resend --actor NAME --note TEXT [--provider-ref ID] [flags]",
		subcommand{"list", runReviewList}, subcommand{"resolve", runReviewResolve})
}

func runReviewList(ctx context.Context, a *App, args []string) error {
	f := newFlags("review list", "payonce review list [--provider P] [--kind K] [--code C] [--limit N] [--json]",
		`Lists the operations in manual review, oldest first. Automation sends nothing
more for them (it only keeps looking them up, read-only); an operator checks
the provider's dashboard and resolves each with "payonce review resolve".`)
	var asJSON bool
	lf := addLedgerFlags(f, &asJSON, "print one JSON object per operation")
	var provider, kind, code string
	var limit int
	f.StringVar(&provider, "provider", "", "only operations of provider `P`")
	f.StringVar(&kind, "kind", "", "only operations of kind `K`")
	f.StringVar(&code, "code", "", "only operations whose review code is `C` (window_passed, duplicated, ...)")
	f.IntVar(&limit, "limit", 100, "at most `N` operations")
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	if err := checkLimit(limit); err != nil {
		return err
	}
	if _, err := parseKindFlag(kind); err != nil {
		return err
	}
	reviewCode, err := parseOptional("code", code, ledgerdriver.ParseReviewCode, "window_passed, duplicated, processing, key_mismatch, contradicted, webhook_contradiction, request_unreadable or other")
	if err != nil {
		return err
	}
	l, err := a.openLedger(ctx, lf, openExisting)
	if err != nil {
		return err
	}
	defer l.Close()
	ops, err := l.store.ListReview(ctx, ledger.ReviewFilter{Provider: provider, Kind: kind, Code: reviewCode, Limit: limit})
	if err != nil {
		return fmt.Errorf("listing operations in review: %w", err)
	}
	_, err = writeOps(a.Stdout, ops, asJSON, "no operations in review",
		func(op ledger.Operation) any {
			return struct {
				opListJSON
				ReviewCode   string     `json:"review_code"`
				ReviewReason string     `json:"review_reason"`
				ReviewAt     *time.Time `json:"review_at"`
			}{listJSON(op), string(op.ReviewCode), op.ReviewReason, timeJSON(op.ReviewAt)}
		},
		"ID\tPROVIDER\tKIND\tREFERENCES\tIN REVIEW SINCE\tATTEMPTS\tPROVIDER REF\tCODE\tREASON",
		func(w io.Writer, op ledger.Operation) {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", op.ID, op.Provider, op.Kind, strings.Join(op.References, "/"),
				timeText(op.ReviewAt), op.Attempts, dash(op.ProviderRef), op.ReviewCode, op.ReviewReason)
		})
	return err
}

func runReviewResolve(ctx context.Context, a *App, args []string) error {
	f := newFlags("review resolve", "payonce review resolve ID --outcome succeeded|failed|resend --actor NAME --note TEXT [--provider-ref ID] [flags]",
		`Records an operator's decision on an operation in manual review:
  succeeded  the money moved: give the provider's id of the object with --provider-ref
  failed     the money did not move
  resend     the provider has no record under the operation's key: send it again under
             a new key (the next generation); "payonce reconcile" sends it
The decision is kept as an audit entry naming --actor.

Before a resend payonce asks the provider about the operation under every key
it has carried, and refuses (exit code 2, the reason on stderr, nothing
recorded) when an earlier object succeeded or is still processing, when the
review reason is "duplicated", or when the provider could not be asked.

Credentials: only --outcome resend asks the provider, so only it needs the
provider's credentials in the environment (as the payment commands do), and
only it reads --timeout, --key-ttl, --clock-skew, --search-lag and --base-url.
--outcome succeeded and --outcome failed are recorded in the ledger alone and
need no credentials. --provider defaults to the operation's own.`)
	var asJSON bool
	lf := addLedgerFlags(f, &asJSON, "print the resolved operation as one JSON object")
	pf := addProviderFlags(f)
	var outcome, actor, note, ref string
	f.StringVar(&outcome, "outcome", "", "`OUTCOME`: succeeded, failed or resend (required)")
	f.StringVar(&actor, "actor", "", "`NAME` of who decides, e.g. yours (required)")
	f.StringVar(&note, "note", "", "`TEXT`: why, e.g. what the provider's dashboard shows (required)")
	f.StringVar(&ref, "provider-ref", "", "the provider's `ID` of the object (required with succeeded)")
	pos, err := f.parseArgs(a, args, "ID")
	if err != nil {
		return err
	}
	out, err := ledgerdriver.ParseResolutionOutcome(outcome)
	if err != nil {
		return usageErrorf("--outcome %q: use succeeded, failed or resend", outcome)
	}
	switch {
	case actor == "":
		return usageErrorf("--actor is required: who takes this decision")
	case note == "":
		return usageErrorf("--note is required: why, e.g. what the provider's dashboard shows")
	case out == ledger.ResolveSucceeded && ref == "":
		return usageErrorf("--provider-ref is required with --outcome succeeded: the provider's id of the object that moved the money")
	}
	l, err := a.openLedger(ctx, lf, openExisting)
	if err != nil {
		return err
	}
	defer l.Close()
	cur, _, err := l.store.Get(ctx, pos[0])
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return usageErrorf("no operation with id %q in %s (\"payonce review list\" shows the ids)", pos[0], l.desc)
	case err != nil:
		return fmt.Errorf("reading operation %s: %w", pos[0], err)
	case cur.Status != ledger.StatusManualReview:
		return usageErrorf("operation %s is %s, not in manual review: nothing to resolve", pos[0], cur.Status)
	}
	// The operation's own provider unless one is named.
	if !pf.f.wasSet("provider") && a.Env("PAYONCE_PROVIDER") == "" {
		pf.provider = cur.Provider
	}
	if name := pf.name(a); name != cur.Provider {
		creds := ""
		if out == ledger.ResolveResend {
			creds = " (and that provider's credentials)"
		}
		return usageErrorf("operation %s is a %s operation, not %s: resolve it with --provider %s%s",
			cur.ID, cur.Provider, name, cur.Provider, creds)
	}
	p := payonce.ResolveParams{OperationID: pos[0], Outcome: out, Actor: actor, Note: note, ProviderRef: ref}
	var op ledger.Operation
	if out == ledger.ResolveResend {
		op, err = a.resolveResend(ctx, pf, l.store, cur, p)
	} else {
		// Client.Resolve asks the provider only before a resend (a new key
		// is safe only when the provider says no earlier one moved money);
		// for succeeded and failed it is exactly payonce.Resolve on the
		// ledger, the operator's word being the evidence. So those need no
		// client, and no credentials: an operator can record what the
		// dashboard shows from a machine that holds no provider secret.
		op, err = payonce.Resolve(ctx, l.store, p)
	}
	switch {
	case errors.Is(err, payonce.ErrResendRefused):
		return usageErrorf("%s; nothing was recorded and operation %s stays in review", strings.TrimPrefix(err.Error(), "payonce: "), pos[0])
	case errors.Is(err, ledger.ErrNotFound):
		return usageErrorf("no operation with id %q in %s (\"payonce review list\" shows the ids)", pos[0], l.desc)
	case errors.Is(err, ledger.ErrNotInReview):
		cur, _, gerr := l.store.Get(ctx, pos[0])
		if gerr == nil {
			return usageErrorf("operation %s is %s, not in manual review: nothing to resolve", pos[0], cur.Status)
		}
		return withCode(ExitUsage, err)
	case errors.Is(err, payonce.ErrInvalid):
		return withCode(ExitUsage, err)
	case err != nil:
		return err
	}
	if asJSON {
		return writeJSON(a.Stdout, fullJSON(op))
	}
	fmt.Fprintf(a.Stdout, "operation %s is now %s\n", op.ID, op.Status)
	if out == ledger.ResolveResend {
		fmt.Fprintf(a.Stdout, "it will be sent under the new key %s (generation %d): run \"payonce reconcile --until-idle\", or the same payment command again\n",
			op.Key, op.Generation)
	}
	return nil
}

// resolveResend records a resend through a client of the operation's
// provider, which asks the provider first (Client.Resolve), and so needs
// its credentials.
func (a *App) resolveResend(ctx context.Context, pf *providerFlags, store ledger.Store, cur ledger.Operation, p payonce.ResolveParams) (ledger.Operation, error) {
	if missing := a.Providers.missing(cur.Provider, a.Env); len(missing) > 0 {
		return ledger.Operation{}, usageErrorf("--outcome resend asks %s about every key operation %s has carried, so it needs %s set in the environment "+
			"(credentials are never taken from flags); --outcome succeeded or failed needs none", cur.Provider, cur.ID, strings.Join(missing, " and "))
	}
	client, err := a.newClient(pf, store, quiet)
	if err != nil {
		return ledger.Operation{}, err
	}
	return client.Resolve(ctx, p)
}

// parseOptional parses the value of flag --name with parse, unless it is
// empty (the zero T: no filter). A value parse refuses is a usage error
// that lists the valid ones (use).
func parseOptional[T any](name, value string, parse func(string) (T, error), use string) (T, error) {
	var zero T
	if value == "" {
		return zero, nil
	}
	v, err := parse(value)
	if err != nil {
		return zero, usageErrorf("--%s %q is not a %s: use %s", name, value, name, use)
	}
	return v, nil
}

// parseKindFlag parses --kind, "" being every kind.
func parseKindFlag(kind string) (payonce.Kind, error) {
	return parseOptional("kind", kind, payonce.ParseKind, "charge, capture, cancel or refund")
}

// checkLimit refuses a --limit the ledger cannot list in one page.
func checkLimit(limit int) error {
	if limit < 1 || limit > ledger.MaxLimit {
		return usageErrorf("--limit must be between 1 and %d, got %d", ledger.MaxLimit, limit)
	}
	return nil
}

// openListing checks --limit, then opens the existing ledger for a
// listing.
func (a *App) openListing(ctx context.Context, lf *ledgerFlags, limit int) (*ledgerConn, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	return a.openLedger(ctx, lf, openExisting)
}

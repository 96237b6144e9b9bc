package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Exit codes of every command; see the package documentation.
const (
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2
	ExitFailed      = 3
	ExitUnknown     = 4
	ExitInProgress  = 5
	ExitReview      = 6
	ExitUnavailable = 7
	// ExitLedgerUnavailable: the ledger's database could not be reached or
	// went away before the call could have sent anything. A passing
	// condition, not a usage error: run the same command again later.
	ExitLedgerUnavailable = 8
	// ExitNotSettled: "reconcile --until-settled" stopped (its --settle-timeout
	// passed, or a signal) while operations were still pending, in flight
	// or unknown; its report says which and when they are next checked.
	ExitNotSettled = 9
	// ExitChargeNotSettled: a capture, cancel or refund named an order
	// whose charge is recorded but not settled yet (pending, in flight,
	// unknown or in manual review: payonce.ErrNotSettled). Nothing was sent
	// or recorded; run the same command again once the charge has settled.
	// Its own code, because a script should wait and retry it, not treat
	// it as a crash (1) or a mistake on the command line (2).
	ExitChargeNotSettled = 10
	// ExitDiffers: "payonce audit" found differences between the ledger
	// and the provider's records (printed, and recorded as findings unless
	// --dry-run). Its own code, so that a scheduled audit alerts on it
	// without mistaking it for a failure to run (1) or a bad flag (2).
	ExitDiffers = 11
)

// exitCodesHelp is the exit code table printed by help.
const exitCodesHelp = `Exit codes:
  0  succeeded
  1  any other error
  2  usage or configuration error (bad flag, amount, currency, unknown command,
     provider or status, bad ledger URL, wrong database credentials, missing
     credential variable, unknown operation id)
  3  failed: declined or refused by the provider (final)
  4  outcome unknown: the request may have reached the provider; run
     "payonce reconcile" (or the same command later) to settle it
  5  in progress: another process holds the operation right now
  6  manual review: an operator decides ("payonce review list")
  7  provider unavailable: nothing was sent; recorded as pending
  8  ledger unavailable: the ledger's database could not be reached (or went
     away) before anything was sent; run the same command again later. A call
     that may already have sent its request exits 4 instead
  9  not settled: "reconcile --until-settled" stopped (--settle-timeout, or a
     signal) with operations still pending, in flight or unknown
 10  charge not settled: capture, cancel or refund of an order whose charge is
     still pending, in flight, unknown or in review; nothing was sent or
     recorded. Settle the charge ("payonce reconcile", "payonce review"), then
     run the same command again
 11  the audit found differences: "payonce audit" printed them and recorded
     them as findings ("payonce audit findings")
`

// App runs commands with its own environment and output, so that tests can
// run them in-process. The zero value is not usable; see Main.
type App struct {
	// Env reads an environment variable (os.Getenv in the binary).
	Env func(string) string
	// Stdout receives results; Stderr receives errors, warnings and progress.
	Stdout, Stderr io.Writer
	// Providers are the adapters --provider may name.
	Providers *Registry
	// Now is the clock of what the commands print (ages, countdowns);
	// nil is time.Now.
	Now func() time.Time
}

func (a *App) now() time.Time {
	if a.Now == nil {
		return time.Now()
	}
	return a.Now()
}

// Main runs the payonce command line given in args (without the program
// name) and returns the process exit code. SIGINT and SIGTERM cancel the
// command's context: a charge in flight records what it knows, and
// "reconcile" stops after its current pass.
func Main(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	a := &App{Env: env, Stdout: stdout, Stderr: stderr, Providers: DefaultRegistry()}
	return a.Run(ctx, args)
}

// Run runs one command line and returns its exit code.
func (a *App) Run(ctx context.Context, args []string) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := a.dispatch(ctx, args)
	return a.report(err)
}

// exitError carries an exit code with the error to print.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErrorf is an error the user fixes by changing the command line or the
// configuration: exit code 2.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// withCode gives err an exit code.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// silentExit is an exit code whose explanation was already printed.
type silentExit int

func (e silentExit) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// report prints err (if any) and returns the exit code it carries.
func (a *App) report(err error) int {
	if err == nil {
		return ExitOK
	}
	var s silentExit
	if errors.As(err, &s) {
		return int(s)
	}
	code := ExitError
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	} else if ledgerUnavailable(err) {
		// A command's own read or write of the ledger (ops, stats, a
		// reconcile pass) failed for want of the database. Payment calls
		// never get here with such an error: printResult gives them their
		// code, ExitUnknown first when the request may have left.
		code = ExitLedgerUnavailable
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "payonce: ") {
		msg = "payonce: " + msg
	}
	fmt.Fprintln(a.Stderr, msg)
	return code
}

// command is one command of the tool.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, a *App, args []string) error
}

func commands() []command {
	return []command{
		{"demo", "charge and refund through an in-process fake provider with injected faults, then reconcile", runDemo},
		{"fake", "serve a fake provider on 127.0.0.1 in its own process, for tests of a service that may crash", runFake},
		{"migrate", "create or upgrade the ledger's schema", runMigrate},
		{"charge", "charge (or authorize) one order", runCharge},
		{"capture", "capture an authorized charge", runCapture},
		{"cancel", "cancel an authorized, uncaptured charge", runCancel},
		{"refund", "refund an order, once per --refund-seq", runRefund},
		{"reconcile", "settle what calls left unfinished (once, until idle, or as a loop)", runReconcile},
		{"ops", "list and show operations (ops list, ops show ID)", runOps},
		{"review", "list and resolve operations in manual review", runReview},
		{"cleanup", "delete finished operations older than the retention", runCleanup},
		{"audit", "compare the ledger with the provider's records; list and acknowledge findings", runAudit},
		{"stats", "count operations by provider, kind and status; the oldest open ones; review reasons", runStats},
		{"webhooks", "receive providers' webhooks (webhooks serve) and list recorded events", runWebhooks},
		{"console", "serve the operator console (review queue, timelines, resolve) in a browser", runConsole},
		{"help", "show help for a command", runHelp},
	}
}

func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func (a *App) dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 {
		a.printOverview(a.Stderr)
		return silentExit(ExitUsage)
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		a.printOverview(a.Stdout)
		return nil
	}
	c, ok := findCommand(name)
	if !ok {
		msg := fmt.Sprintf("unknown command %q", name)
		if s := suggest(name); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return usageErrorf("%s; run \"payonce help\" for the list of commands", msg)
	}
	return c.run(ctx, a, args[1:])
}

func (a *App) printOverview(w io.Writer) {
	fmt.Fprint(w, `payonce charges, captures, cancels and refunds through payment providers so
that money moves exactly once, and settles what a failure left unknown.

Usage:
  payonce <command> [flags]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, `
Run "payonce <command> -h" for the flags of a command.

The ledger: --ledger (or PAYONCE_LEDGER) is a postgres:// URL, sqlite:PATH or a
file path; default sqlite:payonce.db. --schema (or PAYONCE_SCHEMA) picks the
PostgreSQL schema, default public. Provider credentials come only from the
environment: %s.

%s`, a.Providers.credentialHelp(), exitCodesHelp)
}

func runHelp(ctx context.Context, a *App, args []string) error {
	if len(args) == 0 || args[0] == "help" {
		a.printOverview(a.Stdout)
		return nil
	}
	if _, ok := findCommand(args[0]); !ok {
		return usageErrorf("unknown command %q; run \"payonce help\" for the list of commands", args[0])
	}
	return a.dispatch(ctx, append(append([]string(nil), args...), "-h"))
}

// suggest returns the command closest to name, if it is close enough to be
// a typo.
func suggest(name string) string {
	best, bestD := "", 3
	names := make([]string, 0, 12)
	for _, c := range commands() {
		names = append(names, c.name)
	}
	sort.Strings(names)
	for _, n := range names {
		if d := editDistance(strings.ToLower(name), n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// subcommand is one subcommand of a command that has some (ops, review).
type subcommand struct {
	name string
	run  func(ctx context.Context, a *App, args []string) error
}

// runSubcommand runs the subcommand of cmd that args name, answers -h with
// usage and the subcommands' help commands, and refuses anything else.
func runSubcommand(ctx context.Context, a *App, args []string, cmd, usage string, subs ...subcommand) error {
	if len(args) == 0 {
		return usageErrorf("%s needs a subcommand: %s", cmd, usage)
	}
	for _, s := range subs {
		if args[0] == s.name {
			return s.run(ctx, a, args[1:])
		}
	}
	switch args[0] {
	case "-h", "-help", "--help":
		helps := make([]string, len(subs))
		for i, s := range subs {
			helps[i] = fmt.Sprintf("\"payonce %s %s -h\"", cmd, s.name)
		}
		fmt.Fprintf(a.Stdout, "Usage:\n  %s\n\nRun %s for their flags.\n", usage, strings.Join(helps, " or "))
		return nil
	}
	return usageErrorf("unknown %s subcommand %q: %s", cmd, args[0], usage)
}

// writeJSON writes v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

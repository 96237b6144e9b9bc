package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// This file is how a payment command reports its call: the exit code of
// its error, and its result as text or as one JSON object.

// resultJSON is the --json form of a call's result.
type resultJSON struct {
	OperationID  string `json:"operation_id"`
	Key          string `json:"key"`
	Provider     string `json:"provider"`
	Kind         string `json:"kind"`
	Status       string `json:"status"`
	ProviderRef  string `json:"provider_ref"`
	Code         string `json:"code"`
	DeclineCode  string `json:"decline_code"`
	Message      string `json:"message"`
	Attempts     int    `json:"attempts"`
	Replayed     bool   `json:"replayed"`
	ReviewCode   string `json:"review_code"`
	ReviewReason string `json:"review_reason"`
}

// callExit returns the exit code of a call's error, and whether the error
// describes where the operation stands (so its result is worth printing).
func callExit(err error) (code int, outcome bool) {
	switch {
	case err == nil:
		return ExitOK, true
	case errors.Is(err, payonce.ErrInvalid), errors.Is(err, payonce.ErrFingerprintMismatch),
		errors.Is(err, ledger.ErrNotFound):
		return ExitUsage, false
	case errors.Is(err, payonce.ErrNotSettled):
		// Nothing was sent: the call is refused until the charge it acts
		// on has settled. A passing state, not a usage error or a crash.
		return ExitChargeNotSettled, false
	case errors.Is(err, payonce.ErrDeclined):
		return ExitFailed, true
	case errors.Is(err, payonce.ErrManualReview):
		return ExitReview, true
	case errors.Is(err, payonce.ErrProviderUnavailable):
		return ExitUnavailable, true
	case errors.Is(err, payonce.ErrInProgress):
		return ExitInProgress, true
	case errors.Is(err, payonce.ErrOutcomeUnknown):
		// Before ledger unavailability: a ledger lost after the request
		// left wraps the database's error in ErrOutcomeUnknown, and that
		// call may have moved money; only a lookup can say.
		return ExitUnknown, true
	case ledgerUnavailable(err):
		// The library reports every ledger failure after the first attempt
		// was journaled as ErrOutcomeUnknown; any other one happened
		// before a request could leave.
		return ExitLedgerUnavailable, false
	}
	return ExitError, false
}

// printResult prints a call's result and returns the error that carries
// its exit code.
func (a *App) printResult(kind payonce.Kind, res payonce.Result, err error, asJSON bool) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	code, outcome := callExit(err)
	if !outcome {
		if code == ExitLedgerUnavailable {
			return unavailableErrorf("the ledger is unavailable, nothing was sent: %w; run the same command again once the database is back", err)
		}
		if code == ExitChargeNotSettled {
			return withCode(code, fmt.Errorf("%w; nothing was sent or recorded. Settle the charge first (\"payonce reconcile\" looks it up; "+
				"\"payonce review list\" if it is in review), then run this command again", err))
		}
		if errors.Is(err, payonce.ErrFingerprintMismatch) {
			return usageErrorf("this %s (operation %s) was already recorded with a different request (amount, currency, "+
				"payment method...); nothing was sent. One order is charged once: a different request needs another --order "+
				"(or, for a refund, another --refund-seq)", kind, res.OperationID)
		}
		return withCode(code, err)
	}
	if res.Kind == "" {
		res.Kind = kind
	}
	if asJSON {
		if jerr := writeJSON(a.Stdout, resultJSON{
			OperationID: res.OperationID, Key: res.Key, Provider: res.Provider, Kind: string(res.Kind),
			Status: string(res.Status), ProviderRef: res.ProviderRef, Code: res.Code, DeclineCode: res.DeclineCode,
			Message: res.Message, Attempts: res.Attempts, Replayed: res.Replayed, ReviewCode: string(res.ReviewCode), ReviewReason: res.ReviewReason,
		}); jerr != nil {
			return jerr
		}
	} else {
		printResultText(a.Stdout, res)
	}
	if code == ExitOK {
		return nil
	}
	if !asJSON {
		fmt.Fprintf(a.Stderr, "payonce: %s\n", explain(res, err))
	}
	return silentExit(code)
}

func printResultText(w io.Writer, res payonce.Result) {
	status := string(res.Status)
	if res.Replayed {
		status += " (replayed from the ledger; the provider was not called)"
	}
	fmt.Fprintf(w, "%s %s\n", res.Kind, status)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "  %s\t%s\n", k, v)
		}
	}
	row("operation", res.OperationID)
	if res.Key != res.OperationID {
		row("key", res.Key)
	}
	row("provider", res.Provider)
	row("provider ref", res.ProviderRef)
	row("attempts", fmt.Sprint(res.Attempts))
	if res.Code != "" || res.DeclineCode != "" {
		row("code", strings.TrimSpace(res.Code+" "+paren(res.DeclineCode)))
	}
	row("message", res.Message)
	row("review code", string(res.ReviewCode))
	row("review reason", res.ReviewReason)
	_ = tw.Flush()
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

// explain says what a non-success result means and what to do.
func explain(res payonce.Result, err error) string {
	switch {
	case errors.Is(err, payonce.ErrDeclined):
		msg := res.Provider + " refused the " + string(res.Kind)
		var de *payonce.DeclinedError
		if errors.As(err, &de) {
			if c := strings.TrimSpace(de.Code + " " + paren(de.DeclineCode)); c != "" {
				msg += ": " + c
			}
			if de.Message != "" {
				msg += ": " + de.Message
			}
		}
		return msg + " (final: running the command again gives the same answer)"
	case errors.Is(err, payonce.ErrManualReview):
		return fmt.Sprintf("operation %s is in manual review: %s; automation sends nothing more. "+
			"See \"payonce review list\" and resolve it with \"payonce review resolve\"", res.OperationID, res.ReviewReason)
	case errors.Is(err, payonce.ErrProviderUnavailable):
		return fmt.Sprintf("%s was not reached, nothing was sent; the operation is recorded as pending: "+
			"\"payonce reconcile\" sends it later, or run the same command again", res.Provider)
	case errors.Is(err, payonce.ErrInProgress):
		return "another process is working on this operation right now; run the same command again shortly"
	}
	msg := "outcome unknown"
	var ee interface{ Unwrap() error }
	if errors.As(err, &ee) && ee.Unwrap() != nil {
		msg += " (" + strings.TrimPrefix(err.Error(), "payonce: ") + ")"
	}
	return msg + fmt.Sprintf(": the request may have reached %s. Do not retry with another order id: "+
		"\"payonce reconcile\" settles it (or run the same command again later)", res.Provider)
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// paymentAbout is the part of the help every payment command shares.
const paymentAbout = `The operation's idempotency key is derived from the order (and refund number):
running the same command again never moves money twice. It returns the
recorded result, or continues the same operation with the same key.

` + exitCodesHelp

// paymentCmd holds what charge, capture, cancel and refund share.
type paymentCmd struct {
	f    *cmdFlags
	lf   *ledgerFlags
	pf   *providerFlags
	json bool
}

func newPaymentCmd(name, usage, about string) *paymentCmd {
	f := newFlags(name, usage, about+"\n\n"+paymentAbout)
	c := &paymentCmd{f: f}
	c.lf = addLedgerFlags(f)
	c.pf = addProviderFlags(f)
	f.BoolVar(&c.json, "json", false, "print the result as one JSON object")
	return c
}

// run opens the ledger, builds the client, calls op and prints its result.
func (c *paymentCmd) run(ctx context.Context, a *App, kind payonce.Kind,
	op func(context.Context, *payonce.Client, ledger.Store) (payonce.Result, error)) error {
	l, err := a.openLedger(ctx, c.lf, openExisting)
	if err != nil {
		return err
	}
	defer l.Close()
	client, err := a.newClient(c.pf, l.store, quiet)
	if err != nil {
		return err
	}
	res, err := op(ctx, client, l.store)
	return a.printResult(kind, res, err, c.json)
}

func runCharge(ctx context.Context, a *App, args []string) error {
	c := newPaymentCmd("charge",
		"payonce charge --order ID --amount MINOR --currency CUR [--payment-method PM] [--customer ID] [--capture-manual] [flags]",
		"Charges an order once; with --capture-manual it only authorizes, and\n\"payonce capture\" takes the money later.")
	var order, amount, cur, pm, customer, description string
	var manual bool
	c.f.StringVar(&order, "order", "", "the order's `ID` in your system (required); one order is charged at most once")
	c.f.StringVar(&amount, "amount", "", "`MINOR` units of the amount, e.g. 1999 for 19.99 (required)")
	c.f.StringVar(&cur, "currency", "", "`CUR`: ISO 4217 currency code, e.g. USD (required)")
	c.f.StringVar(&pm, "payment-method", "", "`PM`: the provider's payment method id or token: pm_... for stripe,\n"+
		"a saved payment_method_id for yookassa, src_... or tok_... for checkout")
	c.f.StringVar(&customer, "customer", "", "the provider's customer `ID`")
	c.f.StringVar(&description, "description", "", "`TEXT` sent with the charge")
	c.f.BoolVar(&manual, "capture-manual", false, "authorize only; capture later with \"payonce capture\"")
	if _, err := c.f.parseArgs(a, args); err != nil {
		return err
	}
	if order == "" {
		return usageErrorf("--order is required: the order's id in your system")
	}
	amt, err := parseAmount(amount, true)
	if err != nil {
		return err
	}
	code, err := parseCurrency(cur, true)
	if err != nil {
		return err
	}
	return c.run(ctx, a, payonce.KindCharge, func(ctx context.Context, cl *payonce.Client, _ ledger.Store) (payonce.Result, error) {
		return cl.Charge(ctx, payonce.ChargeParams{OrderID: order, Amount: amt, Currency: code,
			PaymentMethod: pm, Customer: customer, CaptureManual: manual, Description: description})
	})
}

func runCapture(ctx context.Context, a *App, args []string) error {
	c := newPaymentCmd("capture", "payonce capture --order ID [--amount MINOR --currency CUR] [--payment-ref ID] [flags]",
		"Captures the authorization of an order charged with --capture-manual, once.")
	var order, amount, cur, ref string
	c.f.StringVar(&order, "order", "", "the order's `ID` (required)")
	c.f.StringVar(&amount, "amount", "", "`MINOR` units to capture; default: the whole authorization")
	c.f.StringVar(&cur, "currency", "", "`CUR`: ISO 4217 currency code; default: the currency\nof the order's charge in the ledger")
	c.f.StringVar(&ref, "payment-ref", "", "the provider's payment `ID`; default: the order's charge in the ledger")
	if _, err := c.f.parseArgs(a, args); err != nil {
		return err
	}
	if order == "" {
		return usageErrorf("--order is required: the order whose authorization to capture")
	}
	amt, code, err := parseMoney(amount, cur)
	if err != nil {
		return err
	}
	return c.run(ctx, a, payonce.KindCapture, func(ctx context.Context, cl *payonce.Client, store ledger.Store) (payonce.Result, error) {
		code, err := currencyOr(ctx, cl, store, order, code)
		if err != nil {
			return payonce.Result{}, err
		}
		return cl.Capture(ctx, payonce.CaptureParams{OrderID: order, Amount: amt, Currency: code, PaymentRef: ref})
	})
}

func runCancel(ctx context.Context, a *App, args []string) error {
	c := newPaymentCmd("cancel", "payonce cancel --order ID [--payment-ref ID] [flags]",
		"Cancels the authorization of an order charged with --capture-manual, once.")
	var order, ref string
	c.f.StringVar(&order, "order", "", "the order's `ID` (required)")
	c.f.StringVar(&ref, "payment-ref", "", "the provider's payment `ID`; default: the order's charge in the ledger")
	if _, err := c.f.parseArgs(a, args); err != nil {
		return err
	}
	if order == "" {
		return usageErrorf("--order is required: the order whose authorization to cancel")
	}
	return c.run(ctx, a, payonce.KindCancel, func(ctx context.Context, cl *payonce.Client, _ ledger.Store) (payonce.Result, error) {
		return cl.Cancel(ctx, payonce.CancelParams{OrderID: order, PaymentRef: ref})
	})
}

func runRefund(ctx context.Context, a *App, args []string) error {
	c := newPaymentCmd("refund", "payonce refund --order ID [--refund-seq N] [--amount MINOR --currency CUR] [--payment-ref ID] [flags]",
		"Refunds an order. Each --refund-seq is one refund, made at most once: refund\n#2 of an order is a different operation from refund #1.")
	var order, amount, cur, ref string
	var seq int
	c.f.StringVar(&order, "order", "", "the order's `ID` (required)")
	c.f.IntVar(&seq, "refund-seq", 1, "`N`: the number of this refund within the order, from 1")
	c.f.StringVar(&amount, "amount", "", "`MINOR` units to refund; default: what remains (yookassa needs it given)")
	c.f.StringVar(&cur, "currency", "", "`CUR`: ISO 4217 currency code; default: the currency\nof the order's charge in the ledger")
	c.f.StringVar(&ref, "payment-ref", "", "the provider's payment `ID`; default: the order's charge in the ledger")
	if _, err := c.f.parseArgs(a, args); err != nil {
		return err
	}
	if order == "" {
		return usageErrorf("--order is required: the order to refund")
	}
	if seq < 1 {
		return usageErrorf("--refund-seq must be 1 or more (the number of this refund within the order), got %d", seq)
	}
	amt, code, err := parseMoney(amount, cur)
	if err != nil {
		return err
	}
	return c.run(ctx, a, payonce.KindRefund, func(ctx context.Context, cl *payonce.Client, store ledger.Store) (payonce.Result, error) {
		code, err := currencyOr(ctx, cl, store, order, code)
		if err != nil {
			return payonce.Result{}, err
		}
		return cl.Refund(ctx, payonce.RefundParams{OrderID: order, RefundSeq: seq, Amount: amt, Currency: code, PaymentRef: ref})
	})
}

// parseMoney reads --amount (optional) and --currency, which an amount
// requires.
func parseMoney(amount, cur string) (int64, string, error) {
	amt, err := parseAmount(amount, false)
	if err != nil {
		return 0, "", err
	}
	code, err := parseCurrency(cur, amt > 0)
	return amt, code, err
}

// currencyOr is code, or when it is empty the currency of the order's
// charge in the ledger (orderCurrency).
func currencyOr(ctx context.Context, cl *payonce.Client, store ledger.Store, order, code string) (string, error) {
	if code != "" {
		return code, nil
	}
	return orderCurrency(ctx, cl, store, order)
}

// orderCurrency returns the currency of the order's charge in the ledger,
// for a capture or refund given without --currency.
func orderCurrency(ctx context.Context, cl *payonce.Client, store ledger.Store, order string) (string, error) {
	id, err := payonce.Identity{Provider: cl.Provider().Name(), Kind: payonce.KindCharge, References: []string{order}}.OperationID()
	if err != nil {
		return "", withCode(ExitUsage, fmt.Errorf("--order: %w", err))
	}
	op, _, err := store.Get(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return "", usageErrorf("--currency is required: the ledger has no charge of order %q to take it from", order)
	}
	if err != nil {
		return "", fmt.Errorf("reading the charge of order %q: %w", order, err)
	}
	req, err := payonce.ParseRequest(op.Request)
	if err != nil || req.Currency == "" {
		return "", usageErrorf("--currency is required: the charge of order %q in the ledger has no readable currency", order)
	}
	return req.Currency, nil
}

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
	case errors.Is(err, payonce.ErrDeclined):
		return ExitFailed, true
	case errors.Is(err, payonce.ErrManualReview):
		return ExitReview, true
	case errors.Is(err, payonce.ErrProviderUnavailable):
		return ExitUnavailable, true
	case errors.Is(err, payonce.ErrInProgress):
		return ExitInProgress, true
	case errors.Is(err, payonce.ErrOutcomeUnknown):
		return ExitUnknown, true
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
			Message: res.Message, Attempts: res.Attempts, Replayed: res.Replayed, ReviewReason: res.ReviewReason,
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

// writeJSON writes v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

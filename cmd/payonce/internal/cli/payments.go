package cli

import (
	"context"
	"errors"
	"fmt"

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
	c.lf = addLedgerFlags(f, &c.json, "print the result as one JSON object")
	c.pf = addProviderFlags(f)
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

// parse parses args, then requires --order, saying what the order is for.
func (c *paymentCmd) parse(a *App, args []string, order *string, what string) error {
	if _, err := c.f.parseArgs(a, args); err != nil {
		return err
	}
	if *order == "" {
		return usageErrorf("--order is required: %s", what)
	}
	return nil
}

// addLaterFlags defines the flags that capture, cancel and refund share,
// the commands that act on an order charged before: --order, --payment-ref
// and, when amount is not nil, --amount (its help amountUsage) and
// --currency, which default to the order's charge in the ledger.
func (c *paymentCmd) addLaterFlags(order, ref, amount, cur *string, amountUsage string) {
	c.f.StringVar(order, "order", "", "the order's `ID` (required)")
	c.f.StringVar(ref, "payment-ref", "", "the provider's payment `ID`; default: the order's charge in the ledger")
	if amount != nil {
		c.f.StringVar(amount, "amount", "", amountUsage)
		c.f.StringVar(cur, "currency", "", "`CUR`: ISO 4217 currency code; default: the currency\nof the order's charge in the ledger")
	}
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
	if err := c.parse(a, args, &order, "the order's id in your system"); err != nil {
		return err
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
	c.addLaterFlags(&order, &ref, &amount, &cur, "`MINOR` units to capture; default: the whole authorization")
	if err := c.parse(a, args, &order, "the order whose authorization to capture"); err != nil {
		return err
	}
	return c.runMoney(ctx, a, payonce.KindCapture, order, amount, cur, func(ctx context.Context, cl *payonce.Client, amt int64, code string) (payonce.Result, error) {
		return cl.Capture(ctx, payonce.CaptureParams{OrderID: order, Amount: amt, Currency: code, PaymentRef: ref})
	})
}

func runCancel(ctx context.Context, a *App, args []string) error {
	c := newPaymentCmd("cancel", "payonce cancel --order ID [--payment-ref ID] [flags]",
		"Cancels the authorization of an order charged with --capture-manual, once.")
	var order, ref string
	c.addLaterFlags(&order, &ref, nil, nil, "")
	if err := c.parse(a, args, &order, "the order whose authorization to cancel"); err != nil {
		return err
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
	c.addLaterFlags(&order, &ref, &amount, &cur, "`MINOR` units to refund; default: what remains (yookassa needs it given)")
	c.f.IntVar(&seq, "refund-seq", 1, "`N`: the number of this refund within the order, from 1")
	if err := c.parse(a, args, &order, "the order to refund"); err != nil {
		return err
	}
	if seq < 1 {
		return usageErrorf("--refund-seq must be 1 or more (the number of this refund within the order), got %d", seq)
	}
	return c.runMoney(ctx, a, payonce.KindRefund, order, amount, cur, func(ctx context.Context, cl *payonce.Client, amt int64, code string) (payonce.Result, error) {
		return cl.Refund(ctx, payonce.RefundParams{OrderID: order, RefundSeq: seq, Amount: amt, Currency: code, PaymentRef: ref})
	})
}

// runMoney runs op, a capture or a refund of order, with the amount of
// --amount (optional) and the currency of --currency or, when it is empty,
// of the order's charge in the ledger.
func (c *paymentCmd) runMoney(ctx context.Context, a *App, kind payonce.Kind, order, amount, cur string,
	op func(ctx context.Context, cl *payonce.Client, amt int64, code string) (payonce.Result, error)) error {
	amt, code, err := parseMoney(amount, cur)
	if err != nil {
		return err
	}
	return c.run(ctx, a, kind, func(ctx context.Context, cl *payonce.Client, store ledger.Store) (payonce.Result, error) {
		code, err := currencyOr(ctx, cl, store, order, code)
		if err != nil {
			return payonce.Result{}, err
		}
		return op(ctx, cl, amt, code)
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

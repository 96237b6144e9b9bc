package payonce

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/payonce/payonce/ledger"
)

// Refundable is what the ledger says of an order's payment and its refunds:
// how much can still be refunded and the number of the next refund. Amounts
// are in minor units of Currency.
type Refundable struct {
	// OrderID is the order asked about.
	OrderID string
	// PaymentRef is the provider's id of the order's payment (for a
	// provider whose refunds act on captures, ProviderInfo.RefundsCapture,
	// the capture's id once a manual capture succeeded), as the
	// charge recorded it ("" for a charge that failed without one).
	PaymentRef string
	// Currency is the charge's currency ("" when AmountsKnown is false
	// because Cleanup removed the charge).
	Currency string
	// Captured is what the charge took: its amount, or for a manual-capture
	// charge what its capture took (the capture's amount, or the whole
	// authorization for a capture of Amount 0). It is 0 when the charge
	// failed, and when a manual-capture charge has no succeeded capture
	// (not captured yet, cancelled, the capture failed); while the capture
	// is unsettled, Refundable returns ErrNotSettled.
	Captured int64
	// Refunded is the sum of the succeeded refunds (a refund of Amount 0,
	// "the rest", counts as what was left of Captured at its number).
	Refunded int64
	// Open is the sum of the refunds recorded but not settled (pending,
	// in flight, unknown, in manual review): they may still move money, so
	// they count as taken.
	Open int64
	// Remaining is Captured − Refunded − Open, never below 0: the most a
	// new refund may ask for.
	Remaining int64
	// NextSeq is the next free refund number: one more than the last of
	// the refunds numbered 1, 2, ... without a gap (failed ones included:
	// a number is used once, whatever its outcome).
	NextSeq int
	// AmountsKnown is false when Cleanup removed the charge, its capture or
	// a succeeded refund: a tombstone keeps the outcome and the provider's
	// reference, but Get does not return its amount. The amounts above then
	// count only what the ledger still returns, and Refund does not check
	// the amount (the provider's own refusal is the guard); NextSeq is
	// still exact.
	AmountsKnown bool
}

// maxRefundSeq bounds the refund numbers Refundable probes. Refunds are
// found by reading refund 1, 2, ... until the first number with no record,
// one indexed read each: numbers are given without gaps (Refund refuses a
// gap when it reads the ledger), so the first missing number is the end.
// The bound only keeps a runaway order from turning one call into
// thousands of reads; an order with more refund records than this gets an
// error, never a wrong answer.
const maxRefundSeq = 1000

// Refundable answers from the ledger alone how much of an order's payment
// can still be refunded and under which RefundSeq (see the type). It never
// calls the provider. It reads Config.Store on the store's own connection;
// inside a transaction use RefundableTx.
//
// Errors: an error wrapping ErrNotFound when the ledger has no charge for
// the order; ErrNotSettled while the charge (or its capture) has not
// settled; a *ValidationError for an empty orderID.
func (c *Client) Refundable(ctx context.Context, orderID string) (Refundable, error) {
	return c.RefundableTx(ctx, c.ownReader(), orderID)
}

// RefundableTx is Refundable reading through rd, such as a store's
// ReaderTx(tx) on the caller's transaction: it then counts the refunds tx
// recorded and has not committed. Hold the order's row lock in tx while you
// read it, choose RefundSeq = NextSeq, prepare (PrepareRefundTx) and record
// (CreateOrGetTx): refunds of one order are then serialized and the amount
// check is exact.
//
// It reads the charge, the capture of a manual-capture charge, and refunds
// 1 to NextSeq.
func (c *Client) RefundableTx(ctx context.Context, rd ledger.Reader, orderID string) (Refundable, error) {
	if rd == nil {
		return Refundable{}, nilReader()
	}
	if orderID == "" {
		return Refundable{}, invalid("OrderID", "must not be empty")
	}
	charge, err := c.operation(ctx, rd, KindCharge, []string{orderID})
	switch {
	case errors.Is(err, ErrNotFound):
		return Refundable{}, fmt.Errorf("%w: no charge of order %q is recorded", ErrNotFound, orderID)
	case err != nil:
		return Refundable{}, fmt.Errorf("payonce: reading the charge of order %q: %w", orderID, err)
	case !charge.Status.Final():
		return Refundable{}, fmt.Errorf("%w: the charge of order %q is %s", ErrNotSettled, orderID, ResultOf(charge).Status)
	}
	return c.refundableOf(ctx, rd, orderID, charge)
}

// refundableOf is RefundableTx once the order's charge, settled, is read.
func (c *Client) refundableOf(ctx context.Context, rd ledger.Reader, orderID string, charge ledger.Operation) (Refundable, error) {
	r := Refundable{OrderID: orderID, PaymentRef: charge.ProviderRef, AmountsKnown: true}
	if err := c.captured(ctx, rd, orderID, charge, &r); err != nil {
		return Refundable{}, err
	}
	// A refund of Amount 0 takes "the rest" when the provider carries it
	// out: count it once the fixed amounts are counted, as whatever they
	// leave. Counting it as 0 would let a later refund ask for money it
	// already took.
	var rest []ledger.Status
	for seq := 1; ; seq++ {
		if seq > maxRefundSeq {
			return Refundable{}, fmt.Errorf("payonce: order %q has more than %d refunds recorded; Refundable reads at most that many", orderID, maxRefundSeq)
		}
		op, err := c.operation(ctx, rd, KindRefund, refundReferences(orderID, seq))
		if errors.Is(err, ErrNotFound) {
			r.NextSeq = seq
			break
		}
		if err != nil {
			return Refundable{}, fmt.Errorf("payonce: reading refund %d of order %q: %w", seq, orderID, err)
		}
		if op.Status == ledger.StatusFailed {
			continue // moved no money and never will
		}
		if op.Tombstone {
			r.AmountsKnown = false // succeeded, amount not returned
			continue
		}
		req, err := ParseRequest(op.Request)
		if err != nil {
			return Refundable{}, fmt.Errorf("payonce: refund %d of order %q: reading its recorded request: %w", seq, orderID, err)
		}
		switch {
		case req.Amount == 0:
			rest = append(rest, op.Status)
		case op.Status == ledger.StatusSucceeded:
			r.Refunded += req.Amount
		default:
			r.Open += req.Amount
		}
	}
	for _, st := range rest {
		left := max(0, r.Captured-r.Refunded-r.Open)
		if st == ledger.StatusSucceeded {
			r.Refunded += left
		} else {
			r.Open += left
		}
	}
	r.Remaining = max(0, r.Captured-r.Refunded-r.Open)
	return r, nil
}

// refundTarget is the reference a refund of the order acts on: the
// charge's, or, for a provider whose refunds act on captures
// (ProviderInfo.RefundsCapture) and a manual-capture charge, the
// reference of the order's succeeded capture. Refunding the authorization
// instead would be refused by such a provider (PayPal answers 404) and
// that refusal recorded for good under the refund's identity.
func (c *Client) refundTarget(ctx context.Context, rd ledger.Reader, orderID string, charge ledger.Operation) (string, error) {
	if !c.info.RefundsCapture {
		return charge.ProviderRef, nil
	}
	req, err := ParseRequest(charge.Request)
	if err != nil {
		return "", fmt.Errorf("payonce: the charge of order %q: reading its recorded request: %w", orderID, err)
	}
	if !req.CaptureManual {
		return charge.ProviderRef, nil
	}
	capture, err := c.operation(ctx, rd, KindCapture, []string{orderID})
	switch {
	case errors.Is(err, ErrNotFound):
		return "", invalid("PaymentRef", "the charge of order %q is authorized only: capture it before refunding (%s refunds captures)", orderID, c.cfg.Provider.Name())
	case err != nil:
		return "", fmt.Errorf("payonce: reading the capture of order %q: %w", orderID, err)
	case !capture.Status.Final():
		return "", fmt.Errorf("%w: the capture of order %q is %s", ErrNotSettled, orderID, ResultOf(capture).Status)
	case capture.Status != ledger.StatusSucceeded:
		return "", invalid("PaymentRef", "the capture of order %q %s: nothing was captured that a refund could return", orderID, capture.Status)
	case capture.ProviderRef == "":
		return "", invalid("PaymentRef", "the capture of order %q succeeded without a provider reference; pass the capture's id", orderID)
	}
	return capture.ProviderRef, nil
}

// captured sets r.Captured and r.Currency from the charge and, for a
// manual-capture charge, its capture.
func (c *Client) captured(ctx context.Context, rd ledger.Reader, orderID string, charge ledger.Operation, r *Refundable) error {
	if charge.Status != ledger.StatusSucceeded {
		return nil // declined: nothing taken
	}
	if charge.Tombstone {
		r.AmountsKnown = false
		return nil
	}
	req, err := ParseRequest(charge.Request)
	if err != nil {
		return fmt.Errorf("payonce: the charge of order %q: reading its recorded request: %w", orderID, err)
	}
	r.Currency = req.Currency
	if !req.CaptureManual {
		r.Captured = req.Amount
		return nil
	}
	capture, err := c.operation(ctx, rd, KindCapture, []string{orderID})
	switch {
	case errors.Is(err, ErrNotFound):
		return nil // authorized only: nothing taken yet
	case err != nil:
		return fmt.Errorf("payonce: reading the capture of order %q: %w", orderID, err)
	case !capture.Status.Final():
		// Not settled: it may still take money, or not. Counting it as 0
		// would answer a refund "nothing can be refunded" (ErrInvalid, a
		// 400 the caller does not retry) for an order that will be
		// refundable once the capture settles; say so instead, as the
		// charge's own unsettled state does.
		return fmt.Errorf("%w: the capture of order %q is %s", ErrNotSettled, orderID, ResultOf(capture).Status)
	case capture.Status != ledger.StatusSucceeded:
		// Failed: nothing taken that a refund could return.
		return nil
	case capture.Tombstone:
		r.AmountsKnown = false
		return nil
	}
	if c.info.RefundsCapture && capture.ProviderRef != "" {
		r.PaymentRef = capture.ProviderRef // what a refund acts on (refundTarget)
	}
	creq, err := ParseRequest(capture.Request)
	if err != nil {
		return fmt.Errorf("payonce: the capture of order %q: reading its recorded request: %w", orderID, err)
	}
	r.Captured = req.Amount // Amount 0: the whole authorization
	if creq.Amount != 0 {
		r.Captured = creq.Amount
	}
	return nil
}

// checkRefund refuses, before anything is recorded or sent, a refund that
// the ledger shows cannot be right: more than can still be refunded, or a
// RefundSeq that leaves a gap. charge is the order's charge, settled, read
// through rd.
//
// Why here and not only at the provider: a provider refuses a refund above
// what it still holds, but that refusal comes after the operation was
// recorded and sent; and while other refunds are open (pending, unknown)
// the provider has not counted them yet, so it would accept a refund that,
// once they settle, returns more than was taken.
//
// The check is exact only when refunds of one order are serialized (the
// caller's row lock, inside the transaction rd reads through): two refunds
// checked at once both see the same Remaining. Otherwise the provider's
// refusal remains the last guard.
func (c *Client) checkRefund(ctx context.Context, rd ledger.Reader, p RefundParams, charge ledger.Operation) error {
	// This refund's own record first: when it exists the call is a repeat,
	// answered from its record (or refused by its fingerprint). Checking
	// its amount against a Remaining that already counts it would refuse
	// every honest retry, and a repeat needs none of the other reads.
	_, err := c.operation(ctx, rd, KindRefund, refundReferences(p.OrderID, p.RefundSeq))
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, ErrNotFound):
		return fmt.Errorf("payonce: reading refund %d of order %q: %w", p.RefundSeq, p.OrderID, err)
	}
	r, err := c.refundableOf(ctx, rd, p.OrderID, charge)
	if err != nil {
		return err
	}
	if p.RefundSeq != r.NextSeq {
		// Refunds are found by their numbers up to the first missing one:
		// a refund recorded beyond a gap would be invisible to this check
		// for every later refund, which could then refund it again.
		return invalid("RefundSeq", "is %d but refund %d of order %q is not recorded: number refunds without gaps; use the next free number, %d (Refundable's NextSeq)",
			p.RefundSeq, r.NextSeq, p.OrderID, r.NextSeq)
	}
	if p.Currency != "" && r.Currency != "" && !strings.EqualFold(p.Currency, r.Currency) {
		// A refund returns money in the charge's currency. Some providers'
		// refund requests carry no currency (Stripe's takes amount and
		// payment_intent only), so a refund of 1000 "EUR" of a USD charge
		// would return 1000 US cents, and only the check of the answer
		// would notice, after the money moved. Comparing Amount with
		// Remaining across currencies would mean nothing either.
		return invalid("Currency", "is %s but the charge of order %q is in %s: a refund returns money in the charge's currency", p.Currency, p.OrderID, r.Currency)
	}
	if !r.AmountsKnown {
		return nil // Cleanup took the amounts the check needs; the provider decides
	}
	if p.Amount > r.Remaining || (p.Amount == 0 && r.Remaining == 0) {
		asked := "the rest"
		if p.Amount > 0 {
			asked = strconv.FormatInt(p.Amount, 10)
		}
		return invalid("Amount", "asks for %s but at most %d %s of order %q can still be refunded: captured %d, refunded %d, %d in refunds not settled yet (open)%s",
			asked, r.Remaining, r.Currency, p.OrderID, r.Captured, r.Refunded, r.Open, openHint(r))
	}
	return nil
}

func openHint(r Refundable) string {
	if r.Open == 0 {
		return ""
	}
	return "; open refunds count until they fail"
}

// storeReader is Config.Store as the reader of the calls without Tx: it
// reads on the store's own connection. Its own type lets readError tell
// such a read from one through the caller's transaction.
type storeReader struct{ s ledger.Store }

func (r storeReader) Get(ctx context.Context, id string) (ledger.Operation, []ledger.Attempt, error) {
	return r.s.Get(ctx, id)
}

func (c *Client) ownReader() ledger.Reader { return storeReader{c.cfg.Store} }

// readError explains a ledger read that ran out of time or was cancelled
// on the store's own connection. Why: called inside a transaction that
// holds a connection of the same pool (and a row lock), the read waits for
// a second connection; when every connection is held by such a
// transaction none comes back, and the bare "context deadline exceeded"
// does not say so. errors.Is still finds the cause.
func readError(rd ledger.Reader, err error) error {
	if err == nil {
		return nil
	}
	if _, own := rd.(storeReader); !own {
		return err
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w (the ledger was read on a connection of the store's own; a call made inside a transaction waits there for a second connection: "+
		"use the Tx variant, e.g. PrepareRefundTx, StatusTx or RefundableTx with the store's ReaderTx(tx), which reads through the transaction)", err)
}

func nilReader() error {
	return invalid("rd", "must not be nil: pass the store's ReaderTx(tx), or call the variant without Tx")
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

type orderRequest struct {
	ID            string `json:"id"`
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
	PaymentMethod string `json:"payment_method"`
}

// orderView is what both endpoints answer.
type orderView struct {
	ID       string `json:"id"`
	Amount   int64  `json:"amount,omitempty"`
	Currency string `json:"currency,omitempty"`
	// State is the order's own state (pending, paid, failed, review),
	// written by the feed consumer; it follows Payment.Status.
	State   string      `json:"state,omitempty"`
	Payment paymentView `json:"payment"`
	// Refunds is what the ledger says of the order's refunds, once its
	// charge has settled.
	Refunds *refundsView `json:"refunds,omitempty"`
}

// refundsView is payonce.Refundable, in minor units of the order's currency.
type refundsView struct {
	Count     int   `json:"count"`     // refunds recorded, failed ones included
	Refunded  int64 `json:"refunded"`  // succeeded
	Open      int64 `json:"open"`      // recorded, not settled yet: counted as taken
	Remaining int64 `json:"remaining"` // the most a new refund may ask for
}

type paymentView struct {
	// Status is payonce's ResultStatus: succeeded, failed, pending,
	// in_progress, unknown or manual_review.
	Status      string `json:"status,omitempty"`
	OperationID string `json:"operation_id,omitempty"`
	ProviderRef string `json:"provider_ref,omitempty"`
	Error       string `json:"error,omitempty"`
}

// createOrder records the order and its charge in one transaction, then
// charges synchronously.
func (s *service) createOrder(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var req orderRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "the body must be an order as JSON: " + err.Error()})
		return
	}
	params := payonce.ChargeParams{OrderID: req.ID, Amount: req.Amount, Currency: req.Currency, PaymentMethod: req.PaymentMethod}
	// Keyed (from the order id), fingerprinted and validated; nothing is
	// recorded yet, so a malformed order ends here with 400.
	op, err := s.client.PrepareCharge(ctx, params)
	if err != nil {
		s.answer(w, req, payonce.Result{}, err)
		return
	}
	// The order and its charge operation commit together or not at all.
	// Once this commits the charge will be made even if the process dies
	// the next instant: the Reconciler finds the operation due.
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO orders (id, amount, currency, payment_method) VALUES ($1, $2, $3, $4)
			ON CONFLICT (id) DO NOTHING`, req.ID, req.Amount, req.Currency, req.PaymentMethod); err != nil {
			return err
		}
		// A repeated request finds its operation recorded and records
		// nothing; the same order with another amount or card gets
		// ErrFingerprintMismatch (422) and the transaction rolls back.
		_, _, err := s.store.CreateOrGetTx(ctx, tx, op, time.Now())
		return err
	})
	if err != nil {
		s.answer(w, req, payonce.Result{}, err)
		return
	}
	// Charge now, so that most customers hear the outcome at once. The same
	// params name the same operation and key: this sends the recorded
	// operation, or replays its outcome on a repeated request. RequestPath
	// already bounds it; the deadline covers the ledger writes too.
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := s.client.Charge(cctx, params)
	s.answer(w, req, res, err)
}

// answer maps a call's result to the HTTP answer.
func (s *service) answer(w http.ResponseWriter, req orderRequest, res payonce.Result, err error) {
	code := payonce.HTTPStatus(err)
	if errors.Is(err, payonce.ErrInProgress) {
		// The order is committed and the operation due at once, so the
		// Reconciler (or a concurrent repeat of this request) may hold it:
		// it is being sent, not refused. Accepted, like any other outcome
		// the customer learns from GET /orders/{id}.
		code = http.StatusAccepted
	}
	v := orderView{ID: req.ID, Amount: req.Amount, Currency: req.Currency, Payment: paymentOf(res, err)}
	if code >= 500 {
		s.log.Warn("order failed", "order_id", req.ID, "err", err)
		v.Payment.Error = "internal error" // never the database's message
	}
	writeJSON(w, code, v)
}

// getOrder is the status endpoint: the order, and its charge as the
// ledger records it (Client.Status never calls the provider).
func (s *service) getOrder(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v := orderView{ID: r.PathValue("id")}
	err := s.pool.QueryRow(ctx, `SELECT amount, currency, state FROM orders WHERE id = $1`, v.ID).Scan(&v.Amount, &v.Currency, &v.State)
	if errors.Is(err, pgx.ErrNoRows) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such order"})
		return
	}
	if err == nil {
		res, serr := s.client.Status(ctx, payonce.StatusQuery{Kind: payonce.KindCharge, OrderID: v.ID})
		// Status answers with the Result and the error a Charge would
		// return now (ErrOutcomeUnknown for "unknown"...): that error is
		// the charge's state, not a failure of this request.
		if res.Status != "" {
			v.Payment = paymentOf(res, serr)
			// Cheap: the charge and refunds 1..n, from the ledger alone.
			// ErrNotSettled (charge still open) leaves refunds out.
			if rf, err := s.client.Refundable(ctx, v.ID); err == nil {
				v.Refunds = &refundsView{Count: rf.NextSeq - 1, Refunded: rf.Refunded, Open: rf.Open, Remaining: rf.Remaining}
			}
			writeJSON(w, http.StatusOK, v)
			return
		}
		err = serr
	}
	s.log.Warn("reading an order", "order_id", v.ID, "err", err)
	writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal error"})
}

func paymentOf(res payonce.Result, err error) paymentView {
	p := paymentView{Status: string(res.Status), OperationID: res.OperationID, ProviderRef: res.ProviderRef}
	if err != nil {
		p.Error = err.Error()
	}
	return p
}

// applyFeedEntry is the feed consumer's handler: it marks an order paid,
// failed, in review or pending from an entry of its charge, whoever settled
// it (this request, another replica's Reconciler, a webhook, an operator).
// It writes through tx, the transaction in which the consumer's cursor
// moves: the change and the cursor commit together, so every entry takes
// effect exactly once across crashes (orders.settled counts it).
//
// It follows every status, not only the settled ones: an operator's resend
// out of review moves the charge back to pending, and the order must follow.
func applyFeedEntry(ctx context.Context, tx pgx.Tx, e ledger.FeedEntry) error {
	if e.Kind != string(payonce.KindCharge) || len(e.References) == 0 {
		return nil // refunds do not change the order's state here
	}
	state, settles := "pending", 0 // pending: created, or sent again by an operator
	switch e.To {
	case ledger.StatusSucceeded:
		state, settles = "paid", 1 // a real service ships the order here
	case ledger.StatusFailed:
		state, settles = "failed", 1
	case ledger.StatusManualReview:
		state = "review"
	}
	// References[0] of a charge is its OrderID.
	_, err := tx.Exec(ctx, `UPDATE orders SET state = $2, settled = settled + $3 WHERE id = $1`, e.References[0], state, settles)
	return err
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payonce/payonce"
)

// maxIdempotencyKey bounds the client's Idempotency-Key (Stripe's own
// limit for its keys).
const maxIdempotencyKey = 255

type refundRequest struct {
	// Amount in minor units of the order's currency; 0 or absent refunds
	// what remains.
	Amount int64 `json:"amount"`
}

// refundView is what the refund endpoint answers.
type refundView struct {
	OrderID string `json:"order_id"`
	// RefundSeq is the refund's number within the order (payonce's
	// RefundSeq): a retry with the same Idempotency-Key answers the same
	// number.
	RefundSeq int         `json:"refund_seq,omitempty"`
	Amount    int64       `json:"amount"` // as asked; 0: the rest
	Payment   paymentView `json:"payment"`
}

// refundOrder refunds an order's payment, in part or what remains.
//
// The client names each refund it wants with an Idempotency-Key header and
// sends the same key when it retries (after a timeout, a 5xx, a lost
// answer). The key is mapped to the refund's number in refund_requests, in
// the transaction that records the refund: a retry finds its number and
// replays that refund (or learns its outcome) instead of taking the next
// number, so a retried POST never refunds twice. Without the mapping a
// retry would be a new refund, limited only by what remains.
func (s *service) refundOrder(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	key := r.Header.Get("Idempotency-Key")
	if key == "" || len(key) > maxIdempotencyKey {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "send an Idempotency-Key header (1 to 255 bytes) " +
			"naming this refund, and the same key when you retry it: a retry with the same key never refunds twice"})
		return
	}
	var req refundRequest
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req)
	if errors.Is(err, io.EOF) {
		err = nil // no body: the rest
	}
	if err == nil && (req.Amount < 0 || req.Amount > payonce.MaxAmount) {
		err = errors.New("amount must be 0 (the rest) to 999999999999 minor units")
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": `the body must be {"amount": N} in minor units: ` + err.Error()})
		return
	}

	p := payonce.RefundParams{OrderID: id, Amount: req.Amount}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The order's row lock serializes the refunds of one order: the
		// next number and what remains are read and taken in one step,
		// so two concurrent refunds can neither take the same number nor
		// both spend the same remainder.
		if err := tx.QueryRow(ctx, `SELECT id FROM orders WHERE id = $1 FOR UPDATE`, id).Scan(&id); err != nil {
			return err
		}
		// The ledger is read through tx (ReaderTx): it sees this order's
		// refunds as the lock holder does, and needs no second pool
		// connection, which a small pool whose every connection is held
		// by a transaction waiting on this lock would never give.
		rd := s.store.ReaderTx(tx)
		rf, err := s.client.RefundableTx(ctx, rd, id)
		if err != nil {
			return err // ErrNotFound: no charge (404); ErrNotSettled: not yet (409)
		}
		// A retry takes the number its key was given: that refund is
		// recorded, so recording it again below changes nothing (another
		// amount under the same key: ErrFingerprintMismatch, 422).
		p.RefundSeq, p.Currency = rf.NextSeq, rf.Currency
		err = tx.QueryRow(ctx, `SELECT refund_seq FROM refund_requests WHERE order_id = $1 AND request_id = $2`, id, key).Scan(&p.RefundSeq)
		if errors.Is(err, pgx.ErrNoRows) {
			_, err = tx.Exec(ctx, `INSERT INTO refund_requests (order_id, request_id, refund_seq) VALUES ($1, $2, $3)`, id, key, p.RefundSeq)
		}
		if err != nil {
			return err
		}
		// A new refund of more than remains (or of "the rest" when
		// nothing remains) is refused here, before anything is recorded
		// or sent: a ValidationError on Amount, and tx rolls back with
		// the key's mapping.
		op, err := s.client.PrepareRefundTx(ctx, rd, p)
		if err != nil {
			return err
		}
		_, _, err = s.store.CreateOrGetTx(ctx, tx, op, time.Now())
		return err
	})
	if err != nil {
		p.RefundSeq = 0 // rolled back: no number was taken
		s.answerRefund(w, p, payonce.Result{}, err)
		return
	}
	// Committed: the refund will be made even if the process dies now (the
	// Reconciler finds it due). Refund now, as createOrder charges: the
	// same params name the same operation, so this sends it, or replays
	// its outcome on a retry.
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := s.client.Refund(cctx, p)
	s.answerRefund(w, p, res, err)
}

// answerRefund maps a refund's result to the HTTP answer: 200 refunded,
// 202 recorded and still processing, 402 refused by the provider, 404 no
// such order (or no charge), 409 charge not settled yet, 422 more than
// remains or the key reused for another amount, 400 malformed.
func (s *service) answerRefund(w http.ResponseWriter, p payonce.RefundParams, res payonce.Result, err error) {
	code := payonce.HTTPStatus(err)
	var ve *payonce.ValidationError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such order"})
		return
	case errors.As(err, &ve) && ve.Field == "Amount":
		// Well-formed, but the order cannot give that much back: the
		// error says what remains (captured, refunded, open).
		code = http.StatusUnprocessableEntity
	case errors.Is(err, payonce.ErrInProgress):
		// Recorded and due: the Reconciler (or a concurrent retry) holds
		// it. Being sent, not refused.
		code = http.StatusAccepted
	}
	v := refundView{OrderID: p.OrderID, RefundSeq: p.RefundSeq, Amount: p.Amount, Payment: paymentOf(res, err)}
	if code >= 500 {
		s.log.Warn("refund failed", "order_id", p.OrderID, "refund_seq", p.RefundSeq, "err", err)
		v.Payment.Error = "internal error" // never the database's message
	}
	writeJSON(w, code, v)
}

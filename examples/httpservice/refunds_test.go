package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRefunds drives the refund endpoint against the fake (no faults) with
// a pool of 4 connections: partial refunds, a retry under the same
// Idempotency-Key that must not refund twice, refusals of more than
// remains with nothing sent (the fake's own record), bad requests, and 10
// concurrent refunds of one order that must all finish and never refund
// more than was charged.
func TestRefunds(t *testing.T) {
	h := newHarness(t, harnessOptions{faultRate: "0", poolSize: 4, timeout: 2 * time.Minute})
	svc := h.startService(t, "service")
	charge := func(id, pm string, amount int64) orderView {
		code, body, err := post(h.httpc, h.base+"/orders", orderRequest{ID: id, Amount: amount, Currency: "USD", PaymentMethod: pm})
		require.NoError(t, err)
		var v orderView
		require.NoError(t, json.Unmarshal([]byte(body), &v), body)
		require.Contains(t, []int{http.StatusOK, http.StatusPaymentRequired}, code, body)
		return v
	}
	refund := func(id, key, body string) (int, refundView, string) {
		req, err := http.NewRequest(http.MethodPost, h.base+"/orders/"+id+"/refunds", bytes.NewBufferString(body))
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := h.httpc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var v refundView
		_ = json.Unmarshal(b, &v)
		return resp.StatusCode, v, string(b)
	}
	// refunded is the fake's truth: the refunds it made of a payment.
	refunded := func(paymentRef string) (n int, sum int64) {
		for _, r := range getTruth(t, h.truthURL).Refunds {
			if r.PaymentID == paymentRef {
				n++
				sum += r.Amount
			}
		}
		return n, sum
	}
	remaining := func(id string) refundsView {
		v, code := getOrder(t, h.httpc, h.base, id)
		require.Equal(t, http.StatusOK, code)
		require.NotNil(t, v.Refunds, "GET %s answers no refunds: %+v", id, v)
		return *v.Refunds
	}

	o := charge("order-r", "pm_card_visa", 1000)
	require.Equal(t, "succeeded", o.Payment.Status)
	ref := o.Payment.ProviderRef
	require.Equal(t, refundsView{Remaining: 1000}, remaining("order-r"))

	// A partial refund, then its retry with the same key: one refund.
	code, v, body := refund("order-r", "k1", `{"amount": 300}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 1, v.RefundSeq)
	require.Equal(t, "succeeded", v.Payment.Status)
	code, v, body = refund("order-r", "k1", `{"amount": 300}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 1, v.RefundSeq, "a retry took another refund number")
	n, sum := refunded(ref)
	require.Equal(t, 1, n, "a retry with the same key refunded again")
	require.EqualValues(t, 300, sum)
	// The same key for another amount is refused, nothing recorded.
	code, _, body = refund("order-r", "k1", `{"amount": 200}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, body)

	// More than remains: refused before anything is sent.
	code, _, body = refund("order-r", "k2", `{"amount": 701}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, body)
	require.Contains(t, body, "can still be refunded")
	n, _ = refunded(ref)
	require.Equal(t, 1, n, "an over-refund reached the provider")
	// The refused key was not consumed: the same key for what remains works.
	code, v, body = refund("order-r", "k2", `{"amount": 200}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 2, v.RefundSeq)
	require.Equal(t, refundsView{Count: 2, Refunded: 500, Remaining: 500}, remaining("order-r"))

	// The rest (no amount), then nothing remains.
	code, v, body = refund("order-r", "k3", ``)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 3, v.RefundSeq)
	for i, b := range []string{`{"amount": 0}`, `{"amount": 1}`} {
		code, _, body = refund("order-r", fmt.Sprintf("k4-%d", i), b)
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
	}
	require.Equal(t, refundsView{Count: 3, Refunded: 1000}, remaining("order-r"))
	n, sum = refunded(ref)
	require.Equal(t, 3, n)
	require.EqualValues(t, 1000, sum)

	// Bad requests.
	for _, c := range []struct {
		id, key, body string
		code          int
	}{
		{"order-r", "", `{"amount": 1}`, http.StatusBadRequest},                   // no Idempotency-Key
		{"order-r", "k5", `{"amount": -1}`, http.StatusBadRequest},                // negative
		{"order-r", "k5", `{"amount": "ten"}`, http.StatusBadRequest},             // not a number
		{"order-nope", "k5", `{"amount": 1}`, http.StatusNotFound},                // no such order
		{"order-declined", "k5", `{"amount": 1}`, http.StatusUnprocessableEntity}, // nothing was taken
	} {
		if c.id == "order-declined" {
			require.Equal(t, "failed", charge(c.id, "pm_card_chargeDeclined", 1000).Payment.Status)
		}
		code, _, body := refund(c.id, c.key, c.body)
		require.Equal(t, c.code, code, "%+v: %s", c, body)
	}

	// 10 concurrent refunds of 300 of one order of 1000, with 4
	// connections: three fit, the others are refused, all finish. A
	// refund that fits is answered 200, or 202 when the Reconciler took
	// it between the commit and the request's own send (it is recorded
	// and being sent: the fake shows it below).
	o = charge("order-c", "pm_card_visa", 1000)
	require.Equal(t, "succeeded", o.Payment.Status)
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			code, _, body := refund("order-c", fmt.Sprintf("c%d", i), `{"amount": 300}`)
			mu.Lock()
			defer mu.Unlock()
			switch code {
			case http.StatusOK, http.StatusUnprocessableEntity:
			case http.StatusAccepted:
				code = http.StatusOK // recorded: sent by the Reconciler
			default:
				t.Errorf("concurrent refund %d: %d %s", i, code, body)
			}
			codes[code]++
		})
	}
	wg.Wait()
	require.Equal(t, map[int]int{http.StatusOK: 3, http.StatusUnprocessableEntity: 7}, codes)
	want := refundsView{Count: 3, Refunded: 900, Remaining: 100}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got := remaining("order-c")
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refunds taken by the Reconciler did not settle: %+v, want %+v", got, want)
		}
	}
	n, sum = refunded(o.Payment.ProviderRef)
	require.Equal(t, 3, n)
	require.EqualValues(t, 900, sum)

	require.NoError(t, svc.stop(syscall.SIGTERM, 20*time.Second), svc.tail())
}

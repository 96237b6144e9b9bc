package crashsuite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// TestRegressionTransportResendMasksProcessedAttempt reproduces, without
// processes or PostgreSQL, a defect the crash suite found (its invariant
// "object created before its key window opened"): an attempt is recorded
// not_sent although the provider processed it, so the operation goes back to
// pending with its key window closed, and a later send, after the provider
// forgot the key, charges the order a second time.
//
// How: with keep-alive connections (the client's default HTTP client),
// net/http resends a request carrying an Idempotency-Key header once, by
// itself, when a reused connection fails before an answer arrives. The
// provider processed the first transmission (the PaymentIntent is charged)
// and the connection dropped before the answer; the transparent resend met
// the provider's rate limiter, which answers 429 before the idempotency
// layer. The client classifies the attempt by the only answer it saw, the
// 429, as "not sent, nothing processed": pending, window closed. Pending
// means "safe to send at any time, no lookup"; a send after the key TTL is a
// new request to the provider.
//
// This test fails until the library is fixed (for example: an attempt whose
// request was written more than once, as httptrace shows, may not be
// not_sent; or keep net/http from resending a POST by itself).
func TestRegressionTransportResendMasksProcessedAttempt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clock := mocks.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	fake := mocks.NewStripe(mocks.StripeOptions{Options: mocks.Options{Clock: clock.Now}})
	t.Cleanup(fake.Close)
	store, err := ledgersqlite.Open(filepath.Join(t.TempDir(), "ledger.db"), ledgersqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL(), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	client, err := payonce.New(payonce.Config{
		Provider: psp, Store: store, Now: clock.Now,
		// HTTPClient left to its default: pooled, keep-alives on.
		AttemptTimeout: 5 * time.Second,
		// The 429 asks for 1 s: the call ends at once and leaves the
		// operation as the attempt's outcome made it.
		Retry: payonce.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, MaxRetryAfter: time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}

	// A first charge leaves an idle keep-alive connection to the provider.
	if _, err := client.Charge(ctx, job{Order: "order-warm", Amount: 1000}.charge()); err != nil {
		t.Fatalf("warm-up charge: %v", err)
	}
	// The next POST is processed and its connection dropped before the
	// answer; net/http resends it on a new connection, and that resend is
	// rate limited.
	fake.Script(mocks.Match{Path: "/v1/payment_intents"}, mocks.FaultDropAfterProcessing, mocks.FaultRateLimit429)
	j := job{Order: "order-resent", Amount: 2500}
	id, err := opID(payonce.KindCharge, j.Order)
	if err != nil {
		t.Fatal(err)
	}
	_, callErr := client.Charge(ctx, j.charge())
	t.Logf("first call: %v", callErr)
	if n := fake.PendingFaults(); n != 0 {
		t.Fatalf("the scripted faults were not both consumed (%d left): net/http did not resend the dropped POST", n)
	}
	truth := fake.Truth()
	if got := truth.ChargesBy(stripe.MetaOperation)[id]; got != 1 {
		t.Fatalf("the first transmission should have charged once; charged %d times", got)
	}
	op, atts, err := store.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range atts {
		t.Logf("attempt %d: %s http %d may_have_reached=%v %s", a.Number, a.Outcome, a.HTTPStatus, a.MayHaveReached, a.Error)
	}
	t.Logf("operation: %s, window start %v, provider holds %s (created with key %s)", op.Status, op.WindowStart, truth.Payments[len(truth.Payments)-1].ID, truth.Payments[len(truth.Payments)-1].IdempotencyKey)
	if op.Status == ledger.StatusPending || op.WindowStart.IsZero() {
		t.Errorf("DEFECT: the provider charged order %s, but the ledger records the operation %s with its key window closed "+
			"(attempt recorded not_sent after net/http's own resend was rate limited); the call returned %v", j.Order, op.Status, callErr)
	}
	if errors.Is(callErr, payonce.ErrProviderUnavailable) {
		t.Errorf("DEFECT: the call told the caller %q although the card was charged", payonce.ErrProviderUnavailable)
	}

	// The consequence: the operation is sent again after the provider
	// forgot the key (Stripe: 24 h), and it is a new request.
	clock.Advance(25 * time.Hour)
	res, err := client.Charge(ctx, j.charge())
	t.Logf("call 25 h later: status %s, ref %s, err %v", res.Status, res.ProviderRef, err)
	if n := fake.Truth().ChargesBy(stripe.MetaOperation)[id]; n > 1 {
		t.Errorf("DEFECT: order %s charged %d times (PaymentIntents %v)", j.Order, n, fake.Truth().Payments)
	}
}

package stripe

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
)

// pagedDoer answers GET /v1/payment_intents with pages of one
// PaymentIntent, has_more until pages pages were sent, and GET /v1/refunds
// and GET /v1/disputes with an empty page; it counts the requests.
type pagedDoer struct {
	mu      sync.Mutex
	pages   int
	piCalls int
	calls   int
}

func (d *pagedDoer) Do(req *http.Request) (*http.Response, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	body := `{"object":"list","has_more":false,"data":[]}`
	if req.URL.Path == "/v1/payment_intents" {
		d.piCalls++
		body = fmt.Sprintf(`{"object":"list","has_more":%t,"data":[{"id":"pi_%d","object":"payment_intent","status":"succeeded","amount":1,"currency":"usd","created":1}]}`,
			d.piCalls < d.pages, d.piCalls)
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// The listing keeps to AuditRate: with a rate of 2 per second, 7 requests
// wait 3 s in all after the first (the burst is 1), measured on a manual
// clock that the waits move.
func TestAuditRatePaces(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		want time.Duration
	}{
		{rate: 2, want: 3000 * time.Millisecond},
		{rate: 0, want: 600 * time.Millisecond}, // DefaultAuditRate, 10 per second
		{rate: 50, want: 120 * time.Millisecond},
	} {
		var mu sync.Mutex
		now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		var waits []time.Duration
		p, err := New(Config{APIKey: "sk_test_x", AuditRate: tc.rate, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
		require.NoError(t, err)
		p.sleep = func(_ context.Context, d time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			waits = append(waits, d)
			now = now.Add(d)
			return nil
		}
		// 5 pages of PaymentIntents, then one of refunds and one of
		// disputes: 7 requests.
		hc := &pagedDoer{pages: 5}
		n := 0
		err = p.ListObjects(context.Background(), hc, payonce.AuditQuery{From: time.Unix(0, 0), To: time.Unix(100, 0)},
			func(payonce.AuditObject) error { n++; return nil })
		require.NoError(t, err)
		require.Equal(t, 7, hc.calls)
		require.Equal(t, 5, n)
		var total time.Duration
		for _, w := range waits {
			total += w
		}
		require.Len(t, waits, 6, "every request but the first waits")
		require.InDelta(t, float64(tc.want), float64(total), float64(time.Millisecond), "rate %v", tc.rate)
	}
}

// A listing whose context ends while it waits for its turn stops with the
// context's error.
func TestAuditRateCanceled(t *testing.T) {
	p, err := New(Config{APIKey: "sk_test_x", AuditRate: 0.001})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	hc := &pagedDoer{pages: 3}
	err = p.ListObjects(ctx, hc, payonce.AuditQuery{From: time.Unix(0, 0), To: time.Unix(100, 0)}, func(payonce.AuditObject) error { return nil })
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, hc.calls, "the first request goes at once; the second waits and is canceled")
}

func TestAuditRateConfig(t *testing.T) {
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, err := New(Config{APIKey: "sk_test_x", AuditRate: bad})
		require.ErrorContains(t, err, "stripe.Config.AuditRate")
	}
	p, err := New(Config{APIKey: "sk_test_x"})
	require.NoError(t, err)
	require.EqualValues(t, DefaultAuditRate, p.auditRate)
	require.NotContains(t, p.String(), "AuditRate")
	p, err = New(Config{APIKey: "sk_test_x", AuditRate: 2.5})
	require.NoError(t, err)
	require.EqualValues(t, 2.5, p.auditRate)
	require.Contains(t, p.String(), "AuditRate:2.5")
}

// The audit's state of every PaymentIntent and Refund status, and of the
// canceled PaymentIntents whose charge decides (the table Classify and
// Lookup share: chargeVerdict, canceledCharge, refundVerdict).
func TestAuditStates(t *testing.T) {
	paidCharge := &charge{ID: "ch_1", Object: "charge", Paid: true, Status: chargeSucceeded, PaymentIntent: expandable{ID: "pi_1"}}
	failedCharge := &charge{ID: "ch_1", Object: "charge", Status: chargeFailed, PaymentIntent: expandable{ID: "pi_1"}}
	pendingCharge := &charge{ID: "ch_1", Object: "charge", Status: chargePending, PaymentIntent: expandable{ID: "pi_1"}}
	for _, tc := range []struct {
		status, reason string
		latest         string
		ch             *charge
		want           payonce.AuditState
		err            string
	}{
		{status: piSucceeded, want: payonce.AuditSucceeded},
		{status: piRequiresCapture, want: payonce.AuditSucceeded},
		{status: piProcessing, want: payonce.AuditProcessing},
		{status: piRequiresPaymentMethod, want: payonce.AuditFailed},
		{status: piRequiresAction, want: payonce.AuditFailed},
		{status: piRequiresConfirmation, want: payonce.AuditFailed},
		{status: piCanceled, reason: "abandoned", want: payonce.AuditFailed},
		{status: piCanceled, reason: "automatic", latest: "ch_1", ch: paidCharge, want: payonce.AuditCanceled},
		{status: piCanceled, reason: "requested_by_customer", latest: "ch_1", ch: paidCharge, want: payonce.AuditCanceled},
		{status: piCanceled, latest: "ch_1", ch: failedCharge, want: payonce.AuditFailed},
		{status: piCanceled, latest: "ch_1", ch: pendingCharge, want: payonce.AuditProcessing},
		{status: "requires_source", err: `PaymentIntent status "requires_source"`},
	} {
		pi := paymentIntent{ID: "pi_1", Object: objPaymentIntent, Status: tc.status, CancellationReason: tc.reason, LatestCharge: expandable{ID: tc.latest}}
		v := chargeVerdict(pi, tc.ch)
		got, err := intentAuditState(pi, v)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err)
			continue
		}
		require.NoError(t, err, tc.status)
		require.Equal(t, tc.want, got, "%s %s %v", tc.status, tc.reason, tc.ch)
	}

	p, err := New(Config{APIKey: "sk_test_x"})
	require.NoError(t, err)
	for status, want := range map[string]payonce.AuditState{
		refundSucceeded: payonce.AuditSucceeded, refundPending: payonce.AuditProcessing, refundRequiresAction: payonce.AuditProcessing,
		refundFailed: payonce.AuditFailed, refundCanceled: payonce.AuditFailed,
	} {
		o, err := p.auditRefund(refund{ID: "re_1", Object: objRefund, Status: status, Amount: 5, Currency: "jpy", Created: 10,
			PaymentIntent: expandable{ID: "pi_1"}})
		require.NoError(t, err)
		require.Equal(t, want, o.State, status)
		require.Equal(t, status, o.Status)
		require.Equal(t, "JPY", o.Currency)
		require.Equal(t, "pi_1", o.PaymentRef)
		require.Equal(t, payonce.KindRefund, o.Kind)
		require.Equal(t, time.Unix(10, 0).UTC(), o.Created)
	}
	_, err = p.auditRefund(refund{ID: "re_1", Object: objRefund, Status: "reversed"})
	require.ErrorContains(t, err, `refund status "reversed"`)
}

// Metadata: payonce's keys name the operation; a payonce_kind that is no
// kind, or an object without payonce_op, keeps the object's own kind.
func TestAuditObjectMetadata(t *testing.T) {
	for _, tc := range []struct {
		md         metadata
		op, key    string
		kind, want payonce.Kind
	}{
		{md: metadata{op: "op", key: "k", kind: "charge"}, op: "op", key: "k", kind: payonce.KindCharge, want: payonce.KindCharge},
		{md: metadata{op: "op", key: "k", kind: "refund"}, op: "op", key: "k", kind: payonce.KindCharge, want: payonce.KindRefund},
		{md: metadata{op: "op", kind: "bogus"}, op: "op", kind: payonce.KindCharge, want: payonce.KindCharge},
		{md: metadata{op: "op"}, op: "op", kind: payonce.KindRefund, want: payonce.KindRefund},
		{md: metadata{key: "k", kind: "refund"}, kind: payonce.KindCharge, want: payonce.KindCharge},
		{md: metadata{}, kind: payonce.KindCharge, want: payonce.KindCharge},
	} {
		o := auditObject("x", tc.md, tc.kind, payonce.AuditSucceeded, "s", 1, "usd", 0, "")
		require.Equal(t, tc.op, o.OperationID, "%+v", tc.md)
		require.Equal(t, tc.key, o.Key, "%+v", tc.md)
		require.Equal(t, tc.want, o.Kind, "%+v", tc.md)
	}
}

func TestCeilUnix(t *testing.T) {
	require.Equal(t, int64(10), ceilUnix(time.Unix(10, 0)))
	require.Equal(t, int64(11), ceilUnix(time.Unix(10, 1)))
	require.Equal(t, int64(-9), ceilUnix(time.Unix(-10, 1)))
}

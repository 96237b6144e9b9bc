package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
)

// The demo's webhook receiver: the client's WebhookHandler behind a real
// http.Server on a free loopback port, the fake delivering to it with
// faults (late, twice, out of order, failed attempts retried), as a
// provider does. It counts what it received; what the events did to the
// operations is read back from the ledger's audit entries by the report.

// newWebhookServer is the http.Server a webhook handler runs behind, with
// every phase of a request bounded (the limits of "webhooks serve").
func newWebhookServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: webhookReadHeaderTimeout,
		ReadTimeout:       webhookReadTimeout,
		WriteTimeout:      webhookWriteTimeout,
		IdleTimeout:       webhookIdleTimeout,
		MaxHeaderBytes:    webhookMaxHeaderBytes,
	}
}

// demoReceiver is the receiving end of one demo run's webhooks.
type demoReceiver struct {
	ln   net.Listener
	srv  *http.Server
	path string // e.g. /webhooks/stripe

	mu sync.Mutex
	// counts of deliveries (HTTP requests) and of the events in them (an
	// Adyen delivery carries several)
	deliveries, accepted int
	rejected             map[int]int // by HTTP status
	events               int
	duplicates           int
	dispositions         map[ledger.WebhookDisposition]int // of events recorded the first time
}

// listenWebhooks opens the receiver's port; it serves once serve is called
// (deliveries that arrive before wait in the listen queue).
func listenWebhooks(provider string) (*demoReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("opening the demo's webhook receiver on 127.0.0.1: %w", err)
	}
	return &demoReceiver{ln: ln, path: "/webhooks/" + provider, rejected: map[int]int{},
		dispositions: map[ledger.WebhookDisposition]int{}}, nil
}

// URL is where the fake delivers.
func (r *demoReceiver) URL() string { return "http://" + r.ln.Addr().String() + r.path }

// serve mounts client's webhook handler and starts serving.
func (r *demoReceiver) serve(client *payonce.Client) error {
	h, err := client.WebhookHandler(payonce.WebhookOptions{OnEvent: r.onEvent})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+r.path, r.count(h))
	r.srv = newWebhookServer(mux)
	go func() { _ = r.srv.Serve(r.ln) }()
	return nil
}

// onEvent counts what recording each event did, as the ledger reported
// it (ledger.WebhookReport): a duplicate changed nothing.
func (r *demoReceiver) onEvent(_ payonce.WebhookEvent, rep ledger.WebhookReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events++
	if rep.Duplicate {
		r.duplicates++
		return
	}
	for _, o := range rep.Outcomes {
		r.dispositions[o.Disposition]++
	}
}

// count wraps h to count deliveries by the status they were answered with.
func (r *demoReceiver) count(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, req)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.deliveries++
		if sw.status >= 200 && sw.status < 300 {
			r.accepted++
		} else {
			r.rejected[sw.status]++
		}
	})
}

// statusWriter remembers the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// close stops the server; deliveries still in flight are cut (the fake's
// sender is stopped first, so none are).
func (r *demoReceiver) close() {
	if r == nil {
		return
	}
	if r.srv == nil {
		_ = r.ln.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := r.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		_ = r.srv.Close()
	}
}

// webhookCounts is the webhook part of the demo's report.
type webhookCounts struct {
	Enabled bool   `json:"enabled"`
	URL     string `json:"url,omitempty"`
	// The fake's side (mocks.WebhookStats): events it emitted, of which it
	// delivered a second copy, attempts that failed on the way (and were
	// retried), deliveries given up after the last attempt, and deliveries
	// still queued when the demo ended.
	Sent           int `json:"sent"`
	SentTwice      int `json:"sent_twice"`
	FailedAttempts int `json:"failed_attempts"`
	GaveUp         int `json:"gave_up"`
	Dropped        int `json:"dropped"`
	// The receiver's side: HTTP deliveries, answered 2xx or not (by
	// status), the events in them, recorded the first time or acknowledged
	// as duplicates of an event already recorded, and what the recorded
	// ones did to operations (one count per operation outcome).
	Deliveries   int            `json:"deliveries"`
	Accepted     int            `json:"accepted"`
	Rejected     int            `json:"rejected"`
	RejectedBy   map[string]int `json:"rejected_by_status"`
	Events       int            `json:"events"`
	Recorded     int            `json:"recorded"`
	Duplicates   int            `json:"duplicates"`
	Dispositions map[string]int `json:"dispositions"`
}

// webhookCounts reads the counts so far; r may be nil (webhooks off).
func (r *demoReceiver) webhookCounts(st mocks.WebhookStats) webhookCounts {
	c := webhookCounts{RejectedBy: map[string]int{}, Dispositions: map[string]int{}}
	for _, d := range ledger.WebhookDispositions {
		c.Dispositions[string(d)] = 0
	}
	if r == nil {
		return c
	}
	c.Enabled, c.URL = true, r.URL()
	c.Sent, c.SentTwice, c.FailedAttempts, c.GaveUp, c.Dropped = st.Queued, st.Duplicated, st.Failed, st.GaveUp, st.Dropped
	r.mu.Lock()
	defer r.mu.Unlock()
	c.Deliveries, c.Accepted, c.Events, c.Duplicates = r.deliveries, r.accepted, r.events, r.duplicates
	c.Recorded = r.events - r.duplicates
	for status, n := range r.rejected {
		c.Rejected += n
		c.RejectedBy[fmt.Sprint(status)] = n
	}
	for d, n := range r.dispositions {
		c.Dispositions[string(d)] = n
	}
	return c
}

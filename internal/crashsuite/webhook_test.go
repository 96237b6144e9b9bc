package crashsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
)

// Webhooks in the suite. The fake Stripe delivers its events (at least
// once: late, twice, out of order, failed attempts retried) to one URL, the
// driver's webhookFront, which forwards each delivery to the receiver of
// one live worker (client.WebhookHandler on the worker's own 127.0.0.1
// port). Receivers die with their workers: a delivery in flight when a
// worker is killed gets no answer, or the front finds no receiver, and the
// fake delivers it again. For the kills the schedule reserves for it, the
// front holds the 2xx of a receiver that has committed an event, the
// driver kills that worker, and the front drops the answer: a kill between
// commit and reply, whose redelivery must be acknowledged as a duplicate.

// observedPath is the fake's second extra endpoint: what the fake saw
// besides its Truth (fakeObserved), as JSON.
const observedPath = "/__observed"

// fakeObserved is what the fake child observed about the webhooks it
// delivered and the POSTs it received.
type fakeObserved struct {
	// Webhooks are the sender's counts.
	Webhooks mocks.WebhookStats `json:"webhooks"`
	// Deliveries are the sender's attempts that went on the wire, in order.
	Deliveries []deliveryAttempt `json:"deliveries"`
	// PostsByKey counts the POSTs the fake received per Idempotency-Key.
	PostsByKey map[string]int `json:"posts_by_key"`
}

// deliveryAttempt is one attempt of the fake's webhook sender as the fake
// saw it: the event, when the answer (or the failure) came, and the status;
// 0 when no answer came (connection refused or dropped, timeout).
type deliveryAttempt struct {
	EventID string    `json:"event_id"`
	Type    string    `json:"type"`
	At      time.Time `json:"at"`
	Status  int       `json:"status"`
}

func (d deliveryAttempt) ok() bool { return d.Status >= 200 && d.Status < 300 }

// settled reports whether every delivery queued so far got a 2xx or was
// given up on (mocks.WebhookStats: one delivery per event, one more per
// duplicate).
func webhooksSettled(s mocks.WebhookStats) bool {
	return s.Delivered+s.GaveUp+s.Dropped == s.Queued+s.Duplicated
}

// fakeObserver records, in the fake child, each webhook attempt (as the
// transport of the sender's HTTP client, so that it sees exactly the
// answers the sender counts) and each POST per key.
type fakeObserver struct {
	next http.RoundTripper
	// keyHeader carries the idempotency key; auxiliary reports the POSTs
	// that move no money (crashProvider).
	keyHeader string
	auxiliary func(path string) bool

	mu         sync.Mutex
	deliveries []deliveryAttempt
	posts      map[string]int
}

func newFakeObserver(p crashProvider) *fakeObserver {
	// No proxy and no keep-alive, as the sender's own client: a
	// connection lives for one attempt.
	return &fakeObserver{next: &http.Transport{Proxy: nil, DisableKeepAlives: true}, posts: map[string]int{},
		keyHeader: p.keyHeader, auxiliary: p.auxiliaryPOST}
}

// client is the HTTP client the sender delivers with. Its timeout
// outlasts the receiver's own (payonce.WebhookOptions.Timeout, 8 s), so
// that a receiver waiting for the ledger answers before the sender gives
// up on the attempt.
func (o *fakeObserver) client() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: o}
}

// RoundTrip sends one attempt and records it. 2xx here is exactly what the
// sender counts as delivered: it reads the status of this answer only.
func (o *fakeObserver) RoundTrip(req *http.Request) (*http.Response, error) {
	var ev struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	if req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			_ = json.NewDecoder(b).Decode(&ev)
			_ = b.Close()
		}
	}
	resp, err := o.next.RoundTrip(req)
	d := deliveryAttempt{EventID: ev.ID, Type: ev.Type, At: time.Now()}
	if err == nil {
		d.Status = resp.StatusCode
	}
	o.mu.Lock()
	o.deliveries = append(o.deliveries, d)
	o.mu.Unlock()
	return resp, err
}

// countPOSTs counts every POST per idempotency key (o.keyHeader) before
// the fake sees it, but those that move no money (o.auxiliary: PayPal's
// token calls): the check that webhooks never made anything send a
// request.
func (o *fakeObserver) countPOSTs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && !o.auxiliary(r.URL.Path) {
			o.mu.Lock()
			o.posts[r.Header.Get(o.keyHeader)]++
			o.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

func (o *fakeObserver) snapshot(st mocks.WebhookStats) fakeObserved {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := fakeObserved{Webhooks: st, Deliveries: append([]deliveryAttempt(nil), o.deliveries...), PostsByKey: map[string]int{}}
	for k, n := range o.posts {
		out.PostsByKey[k] = n
	}
	return out
}

// fetchObserved reads what the fake observed.
func fetchObserved(ctx context.Context, base string) (fakeObserved, error) {
	var o fakeObserved
	err := getJSON(ctx, base+observedPath, &o)
	return o, err
}

// serveWebhooks starts the worker's webhook receiver on a free 127.0.0.1
// port and prints markerWorkerWebhooks with its URL. Each recorded event is
// printed (markerWebhookEvent) after it is committed and before the
// answer, so that the driver can tell an event applied twice from a
// redelivery acknowledged as a duplicate. stop shuts it down.
func serveWebhooks(client *payonce.Client) (stop func(), err error) {
	h, err := client.WebhookHandler(payonce.WebhookOptions{
		OnEvent: func(ev payonce.WebhookEvent, rep ledger.WebhookReport) {
			state := "new"
			if rep.Duplicate {
				state = "duplicate"
			}
			fmt.Printf("%s %s %s\n", markerWebhookEvent, ev.ID, state)
		},
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for webhooks: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("%s http://%s/webhooks/stripe\n", markerWorkerWebhooks, ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// receiverEvents is what the receivers printed about one event.
type receiverEvents struct{ recorded, duplicates int }

// parseReceiverEvents reads the markerWebhookEvent lines of the given
// stdout lines (every incarnation of every worker).
func parseReceiverEvents(lines []string, into map[string]*receiverEvents) {
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != markerWebhookEvent {
			continue
		}
		e := into[f[1]]
		if e == nil {
			e = &receiverEvents{}
			into[f[1]] = e
		}
		if f[2] == "duplicate" {
			e.duplicates++
		} else {
			e.recorded++
		}
	}
}

// forgedSuffix marks the event ids of the forged deliveries the front
// sends: none may ever be in the inbox.
const forgedSuffix = "forged"

// webhookFront is the driver's forwarding front: the one URL the fake
// delivers to. It forwards each delivery to one live receiver, answering
// 502 when none is up or the receiver gave no answer, so that the fake
// delivers again, exactly as a provider meets a service that is down. It
// also sends, for a share of the deliveries, a forged copy (the event id
// changed, the signature kept) that the receiver must refuse, and it holds
// one receiver's 2xx when armed (see arm).
type webhookFront struct {
	srv       *http.Server
	url       string
	client    *http.Client
	forgeRate float64
	// headers are the delivery headers forwarded to the receiver.
	headers []string

	mu        sync.Mutex
	rng       *rand.Rand
	receivers map[int]frontReceiver
	hold      *frontHold
	st        frontStats
}

type frontReceiver struct {
	c   *child
	url string
}

// frontStats counts what the front did.
type frontStats struct {
	forwarded, noReceiver, unanswered int
	forged, forgedRejected            int
	forgedAccepted                    []string
	held                              []heldDelivery
}

// heldDelivery is a delivery whose 2xx the front held while the driver
// killed the receiver that gave it, then dropped.
type heldDelivery struct {
	worker  int
	eventID string
	at      time.Time
}

// frontHold is one armed hold: the front reports the delivery on held and
// waits for release before dropping the answer.
type frontHold struct {
	held    chan heldDelivery
	release chan struct{}
}

// startWebhookFront listens on a free 127.0.0.1 port; it is closed when the
// test ends.
func startWebhookFront(seed int64, forgeRate float64, p crashProvider) (*webhookFront, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the webhook front: %w", err)
	}
	f := &webhookFront{
		url:       "http://" + ln.Addr().String() + "/webhooks/" + p.name,
		headers:   append([]string{"Content-Type", "User-Agent"}, p.webhookHeaders...),
		client:    &http.Client{Timeout: 9 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}},
		forgeRate: forgeRate,
		rng:       rand.New(rand.NewPCG(uint64(seed), 0xf407)),
		receivers: map[int]frontReceiver{},
	}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

// close stops the front; a held delivery is let go.
func (f *webhookFront) close() { _ = f.srv.Close() }

// register makes c, worker i's current incarnation, a receiver once it has
// printed its URL; a child that has exited is never registered.
func (f *webhookFront) register(i int, c *child) {
	f.mu.Lock()
	r, ok := f.receivers[i]
	f.mu.Unlock()
	if ok && r.c == c || c.Exited() {
		return
	}
	l, ok := c.Stdout().Line(markerWorkerWebhooks)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.receivers[i] = frontReceiver{c: c, url: strings.TrimSpace(strings.TrimPrefix(l, markerWorkerWebhooks))}
}

// remove forgets worker i's receiver (after it was killed).
func (f *webhookFront) remove(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.receivers, i)
}

// arm makes the front hold the next 2xx a receiver gives.
func (f *webhookFront) arm() *frontHold {
	h := &frontHold{held: make(chan heldDelivery, 1), release: make(chan struct{})}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = h
	return h
}

// disarm takes h back; false if the front has taken it already (a held
// delivery is then on h.held).
func (f *webhookFront) disarm(h *frontHold) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hold != h {
		return false
	}
	f.hold = nil
	return true
}

func (f *webhookFront) stats() frontStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.st
	st.forgedAccepted = append([]string(nil), st.forgedAccepted...)
	st.held = append([]heldDelivery(nil), st.held...)
	return st
}

func (f *webhookFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, payonce.MaxWebhookBytes))
	if err != nil {
		http.Error(w, "reading the delivery", http.StatusBadRequest)
		return
	}
	var ev struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(body, &ev)

	f.mu.Lock()
	var rc frontReceiver
	var index int
	found := false
	if n := len(f.receivers); n > 0 {
		// Map order is random; pick one of them by the seeded generator.
		keys := make([]int, 0, n)
		for i := range f.receivers {
			keys = append(keys, i)
		}
		slices.Sort(keys)
		index = keys[f.rng.IntN(n)]
		rc, found = f.receivers[index], true
	}
	forge := found && ev.ID != "" && f.rng.Float64() < f.forgeRate
	if !found {
		f.st.noReceiver++
	}
	f.mu.Unlock()
	if !found {
		// Every receiver is down: the fake must deliver again later.
		http.Error(w, "no receiver up", http.StatusBadGateway)
		return
	}
	if forge {
		f.sendForged(r, rc.url, body, ev.ID)
	}

	status, header, answer, err := f.forward(r, rc.url, body)
	f.mu.Lock()
	f.st.forwarded++
	if err != nil {
		f.st.unanswered++
	}
	var h *frontHold
	if err == nil && status >= 200 && status < 300 && f.hold != nil {
		h, f.hold = f.hold, nil
	}
	f.mu.Unlock()
	if err != nil {
		// The receiver died or hung: no answer, as the provider sees it.
		http.Error(w, "receiver gave no answer", http.StatusBadGateway)
		return
	}
	if h != nil {
		hd := heldDelivery{worker: index, eventID: ev.ID, at: time.Now()}
		h.held <- hd
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
		f.mu.Lock()
		f.st.held = append(f.st.held, hd)
		f.mu.Unlock()
		// The receiver committed and is dead now; its answer is lost
		// with it: the sender sees the connection drop.
		panic(http.ErrAbortHandler)
	}
	for _, k := range []string{"Content-Type", "Retry-After"} {
		if v := header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

// forward POSTs body with the delivery's headers to url and returns the
// answer.
func (f *webhookFront) forward(r *http.Request, url string, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	for _, k := range f.headers {
		if v := r.Header.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, answer, nil
}

// sendForged sends a copy of the delivery with another event id under the
// original signature: what an attacker who saw one delivery could send.
// The receiver must refuse it (400) and record nothing.
func (f *webhookFront) sendForged(r *http.Request, url string, body []byte, id string) {
	forged := bytes.Replace(body, []byte(`"`+id+`"`), []byte(`"`+id+forgedSuffix+`"`), 1)
	status, _, _, err := f.forward(r, url, forged)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.forged++
	switch {
	case err != nil:
		// The receiver is gone: nothing learnt.
	case status == http.StatusBadRequest:
		f.st.forgedRejected++
	case status >= 200 && status < 300:
		f.st.forgedAccepted = append(f.st.forgedAccepted, id+forgedSuffix)
	}
}

// getJSON GETs url and decodes the JSON answer into v.
func getJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

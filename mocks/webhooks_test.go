package mocks

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// recorder is a webhook receiver: it records every body it accepts, in
// the order they arrived, and answers what answer says (200 by default).
type recorder struct {
	mu       sync.Mutex
	bodies   []string
	requests int
	headers  []http.Header
	answer   func(n int, body string) int // n counts requests from 1
	srv      *httptest.Server
}

func newRecorder(t *testing.T) *recorder {
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.requests++
		n, answer := rec.requests, rec.answer
		rec.mu.Unlock()
		status := http.StatusOK
		if answer != nil {
			status = answer(n, string(b))
		}
		if status/100 == 2 {
			rec.mu.Lock()
			rec.bodies = append(rec.bodies, string(b))
			rec.headers = append(rec.headers, r.Header.Clone())
			rec.mu.Unlock()
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) got() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.bodies)
}

// fastDelivery is a delivery to rec that retries quickly.
func fastDelivery(rec *recorder) WebhookDelivery {
	return WebhookDelivery{URL: rec.srv.URL + "/hook", RetryAfter: time.Millisecond}
}

// sendN sends the bodies "0" .. "n-1" and flushes.
func sendN(t *testing.T, s *webhookSender, n int) {
	t.Helper()
	for i := range n {
		s.send([]byte(strconv.Itoa(i)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.flush(ctx))
}

func TestWebhookDeliveryValidate(t *testing.T) {
	for _, ok := range []string{"", "http://127.0.0.1:8080/hook", "https://127.0.0.2/x", "http://[::1]:9/", "http://localhost:1/w"} {
		require.NoError(t, WebhookDelivery{URL: ok}.Validate(), ok)
	}
	for _, c := range []struct {
		d    WebhookDelivery
		want string
	}{
		{WebhookDelivery{URL: "http://example.com/hook"}, `WebhookDelivery.URL has host "example.com", which is not a loopback address`},
		{WebhookDelivery{URL: "http://10.0.0.1/hook"}, "not a loopback address"},
		{WebhookDelivery{URL: "http://127.0.0.1.nip.io/hook"}, "not a loopback address"},
		{WebhookDelivery{URL: "ftp://127.0.0.1/hook"}, `WebhookDelivery.URL has scheme "ftp"`},
		{WebhookDelivery{URL: "http://u:p@127.0.0.1/hook"}, "Username and Password instead"},
		{WebhookDelivery{URL: "/hook"}, "scheme"},
		{WebhookDelivery{Username: "u"}, "WebhookDelivery.Username and Password go together"},
		{WebhookDelivery{Username: "u", Password: "p", Authorization: "a"}, "WebhookDelivery.Authorization and Username"},
		{WebhookDelivery{FailRate: 1.5}, "WebhookDelivery.FailRate is 1.5"},
		{WebhookDelivery{DuplicateRate: -0.1}, "WebhookDelivery.DuplicateRate"},
		{WebhookDelivery{ReorderRate: 2}, "WebhookDelivery.ReorderRate"},
		{WebhookDelivery{Delay: -time.Second}, "WebhookDelivery.Delay is -1s"},
		{WebhookDelivery{RetryAfter: -time.Second}, "WebhookDelivery.RetryAfter"},
		{WebhookDelivery{MaxAttempts: -1}, "WebhookDelivery.MaxAttempts is -1"},
	} {
		require.ErrorContains(t, c.d.Validate(), c.want, c.d.URL)
	}
	require.Panics(t, func() { newWebhookSender(WebhookDelivery{URL: "http://192.0.2.1/"}, 0, nil) },
		"a sender never starts towards a non-loopback address")
}

func TestWebhookSenderDisabledSendsNothing(t *testing.T) {
	var s *webhookSender
	s.send([]byte("x")) // nil-safe
	require.NoError(t, s.flush(context.Background()))
	s.close()
	s = newWebhookSender(WebhookDelivery{}, 1, nil)
	s.send([]byte("x"))
	require.NoError(t, s.flush(context.Background()))
	require.Equal(t, WebhookStats{}, s.stats())
	s.close()
}

func TestWebhookSenderFaultsStillDeliverEveryEvent(t *testing.T) {
	rec := newRecorder(t)
	d := fastDelivery(rec)
	d.FailRate, d.MaxAttempts = 0.5, 40
	// The receiver also refuses every third request: a 500 is retried too.
	rec.answer = func(n int, _ string) int {
		if n%3 == 0 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}
	s := newWebhookSender(d, 7, nil)
	defer s.close()
	sendN(t, s, 30)

	got := rec.got()
	for i := range 30 {
		require.Contains(t, got, strconv.Itoa(i), "every event arrives at least once")
	}
	st := s.stats()
	require.Equal(t, 30, st.Queued)
	require.Equal(t, 30, st.Delivered)
	require.Zero(t, st.GaveUp)
	require.Greater(t, st.Failed, 10, "about half the attempts fail on the way, a third of the rest at the receiver")
}

func TestWebhookSenderGivesUpAfterMaxAttempts(t *testing.T) {
	rec := newRecorder(t)
	rec.answer = func(int, string) int { return http.StatusServiceUnavailable }
	d := fastDelivery(rec)
	d.MaxAttempts = 3
	s := newWebhookSender(d, 1, nil)
	defer s.close()
	sendN(t, s, 1)
	require.Equal(t, WebhookStats{Queued: 1, Failed: 3, GaveUp: 1}, s.stats())
	rec.mu.Lock()
	require.Equal(t, 3, rec.requests)
	rec.mu.Unlock()
}

func TestWebhookSenderRedirectIsAFailure(t *testing.T) {
	rec := newRecorder(t)
	rec.answer = func(int, string) int { return http.StatusFound }
	d := fastDelivery(rec)
	d.MaxAttempts = 2
	s := newWebhookSender(d, 1, nil)
	defer s.close()
	sendN(t, s, 1)
	require.Equal(t, 1, s.stats().GaveUp, "a 3xx is not followed and not a delivery")
}

func TestWebhookSenderDuplicates(t *testing.T) {
	rec := newRecorder(t)
	d := fastDelivery(rec)
	d.DuplicateRate = 1
	s := newWebhookSender(d, 3, nil)
	defer s.close()
	sendN(t, s, 5)
	got := rec.got()
	for i := range 5 {
		require.Equal(t, 2, countOf(got, strconv.Itoa(i)), "event %d is delivered twice", i)
	}
	require.Equal(t, WebhookStats{Queued: 5, Delivered: 10, Duplicated: 5}, s.stats())
}

func countOf(list []string, v string) int {
	n := 0
	for _, s := range list {
		if s == v {
			n++
		}
	}
	return n
}

func TestWebhookSenderReorders(t *testing.T) {
	rec := newRecorder(t)
	d := fastDelivery(rec)
	d.ReorderRate = 1
	// A hold long enough for the overtaker to be queued and delivered
	// first, whatever the scheduling.
	d.RetryAfter = 200 * time.Millisecond
	s := newWebhookSender(d, 5, nil)
	defer s.close()
	sendN(t, s, 4)
	// Each held event waits for the next one, which is never held itself.
	require.Equal(t, []string{"1", "0", "3", "2"}, rec.got())
}

func TestWebhookSenderReleasesALastHeldEvent(t *testing.T) {
	rec := newRecorder(t)
	d := fastDelivery(rec)
	d.ReorderRate = 1
	s := newWebhookSender(d, 5, nil)
	defer s.close()
	sendN(t, s, 1) // nothing overtakes it: it goes after its hold
	require.Equal(t, []string{"0"}, rec.got())
}

func TestWebhookSenderFlushWaitsForDelay(t *testing.T) {
	rec := newRecorder(t)
	d := fastDelivery(rec)
	d.Delay = 150 * time.Millisecond
	s := newWebhookSender(d, 1, nil)
	defer s.close()
	start := time.Now()
	s.send([]byte("late"))
	require.Empty(t, rec.got(), "not before the delay")

	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, s.flush(short), context.DeadlineExceeded)

	require.NoError(t, s.flush(context.Background()))
	require.GreaterOrEqual(t, time.Since(start), d.Delay)
	require.Equal(t, []string{"late"}, rec.got(), "flush returns once the event is delivered")
}

func TestWebhookSenderSignsEveryAttemptAndSendsCredentials(t *testing.T) {
	rec := newRecorder(t)
	rec.answer = func(n int, _ string) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}
	d := fastDelivery(rec)
	d.Username, d.Password = "hook-user", "hook-pass"
	var mu sync.Mutex
	signed := 0
	s := newWebhookSender(d, 1, func(body []byte, h http.Header) {
		mu.Lock()
		defer mu.Unlock()
		signed++
		h.Set("X-Signature", fmt.Sprintf("%s/%d", body, signed))
	})
	defer s.close()
	sendN(t, s, 1)
	require.Equal(t, 2, signed, "a retry is signed anew")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	h := rec.headers[0]
	require.Equal(t, "0/2", h.Get("X-Signature"))
	user, pass, ok := (&http.Request{Header: h}).BasicAuth()
	require.True(t, ok)
	require.Equal(t, "hook-user", user)
	require.Equal(t, "hook-pass", pass)
}

func TestWebhookSenderCloseStopsAHangingDelivery(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select { // hang until the sender gives up on the request
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	s := newWebhookSender(WebhookDelivery{URL: srv.URL}, 1, nil)
	s.send([]byte("a"))
	s.send([]byte("b"))
	<-arrived

	done := make(chan struct{})
	go func() { s.close(); close(done) }()
	select {
	case <-done: // close waited for the worker goroutine, which has exited
	case <-time.After(3 * time.Second):
		t.Fatal("close did not stop the sender")
	}
	st := s.stats()
	require.Equal(t, 2, st.Dropped, "the hanging one and the one behind it")
	require.ErrorContains(t, s.flush(context.Background()), "2 deliveries not done")
	s.send([]byte("c")) // after close: nothing, and no panic
	require.Equal(t, 2, s.stats().Queued)
	s.close() // again: nothing
}

func TestWebhookSenderSeedReplaysFaults(t *testing.T) {
	run := func() WebhookStats {
		rec := newRecorder(t)
		d := fastDelivery(rec)
		d.FailRate, d.DuplicateRate, d.MaxAttempts = 0.4, 0.3, 50
		s := newWebhookSender(d, 42, nil)
		defer s.close()
		sendN(t, s, 20)
		return s.stats()
	}
	require.Equal(t, run(), run(), "the same seed gives the same faults")
}

func TestWebhookSenderCloseLeavesNoGoroutines(t *testing.T) {
	rec := newRecorder(t)
	base := runtime.NumGoroutine()
	s := newWebhookSender(fastDelivery(rec), 1, nil)
	sendN(t, s, 3)
	s.close()
	// Polled here, not with require.Eventually, whose condition runs in a
	// goroutine of its own and would count itself.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after close, %d before the sender:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

package payonce

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"
	"github.com/stretchr/testify/require"
)

// replayHeader is a ReplayDetector reading Stripe's marker.
type replayHeader struct{}

func (replayHeader) Replayed(_ int, h http.Header) bool {
	return h.Get("Idempotent-Replayed") == "true"
}

// A provider replaying a stored 500 under a key says nothing about its
// health now: replays never count against the breaker, fresh 500s do.
func TestBreakerIgnoresReplayedAnswers(t *testing.T) {
	t.Parallel()
	var replayed atomic.Bool
	replayed.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if replayed.Load() {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tel, err := newTelemetry(nil, nil, "stripe")
	require.NoError(t, err)
	cb := newBreaker("stripe", BreakerSettings{ConsecutiveFailures: 2, OpenFor: time.Hour}, log, tel)
	hc := &http.Client{Transport: &breakerTransport{base: http.DefaultTransport, cb: cb, replay: replayHeader{}}}
	send := func() {
		resp, err := hc.Get(srv.URL)
		require.NoError(t, err)
		require.Equal(t, http.StatusInternalServerError, resp.StatusCode, "the answer still reaches the caller")
		require.NoError(t, resp.Body.Close())
	}
	for range 10 {
		send()
	}
	require.Equal(t, gobreaker.StateClosed, cb.State(), "ten replays of a stored 500")
	replayed.Store(false)
	send()
	send()
	require.Equal(t, gobreaker.StateOpen, cb.State(), "two fresh 500s open it")
}

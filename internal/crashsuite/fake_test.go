package crashsuite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/payonce/payonce/mocks"
)

// truthPath is the fake's extra endpoint: the Truth as JSON, for the
// driver. It is served beside the Stripe routes, outside fault injection.
const truthPath = "/__truth"

// fakeRates turns named rates into mocks.FaultRates.
func (r faultRates) kinds() (map[mocks.FaultKind]float64, error) {
	byName := map[string]mocks.FaultKind{}
	for k := mocks.FaultNone + 1; k.String() != fmt.Sprintf("FaultKind(%d)", int(k)); k++ {
		byName[k.String()] = k
	}
	out := map[mocks.FaultKind]float64{}
	for name, rate := range r {
		k, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("unknown fault kind %q", name)
		}
		out[k] = rate
	}
	return out, nil
}

// runFake is the "fake" child: a fake Stripe (or the provider the config
// names: crashProvider) in its own process on
// 127.0.0.1, on the real clock, with random faults, a short key TTL and a
// lagging search, delivering its events as webhooks when cfg.Webhooks has
// a URL. It prints markerFakeReady with its URL and credentials, and
// serves until SIGTERM or until its stdin closes (the driver is gone).
func runFake(cfg childConfig) int {
	rates, err := cfg.FaultRates.kinds()
	if err != nil {
		fmt.Fprintf(os.Stderr, "crashsuite fake: %v\n", err)
		return exitSetup
	}
	prov, err := childProvider(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crashsuite fake: %v\n", err)
		return exitSetup
	}
	// The webhook sender delivers through the observer's client, so that
	// the driver learns which attempt of which event got which answer.
	obs := newFakeObserver(prov)
	webhooks := cfg.Webhooks
	if webhooks.URL != "" {
		webhooks.Client = obs.client()
	}
	h, creds := prov.fake(cfg, mocks.Options{
		KeyTTL:     cfg.KeyTTL,
		Seed:       cfg.FakeSeed,
		FaultRates: rates,
		FaultGETs:  cfg.FaultGETs,
		HangFor:    cfg.HangFor,
		SlowFor:    cfg.SlowFor,
		RetryAfter: cfg.RetryAfter,
		Webhooks:   webhooks,
	})
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+truthPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(h.Truth()); err != nil {
			fmt.Fprintf(os.Stderr, "crashsuite fake: writing the truth: %v\n", err)
		}
	})
	mux.HandleFunc("GET "+observedPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(obs.snapshot(h.WebhookStats())); err != nil {
			fmt.Fprintf(os.Stderr, "crashsuite fake: writing the observations: %v\n", err)
		}
	})
	mux.Handle("/", obs.countPOSTs(h))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "crashsuite fake: listening: %v\n", err)
		return exitSetup
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("%s http://%s %s\n", markerFakeReady, ln.Addr(), creds)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	select {
	case <-ctx.Done():
	case err := <-served:
		fmt.Fprintf(os.Stderr, "crashsuite fake: serving: %v\n", err)
		return exitRun
	}
	h.Release()
	h.StopWebhooks()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(os.Stderr, "crashsuite fake: shutdown: %v\n", err)
	}
	return exitOK
}

// fetchTruth reads the fake's truth.
func fetchTruth(ctx context.Context, base string) (mocks.Truth, error) {
	var t mocks.Truth
	err := getJSON(ctx, base+truthPath, &t)
	return t, err
}

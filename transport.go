package payonce

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/semconv"
	"github.com/sony/gobreaker/v2"
)

// MaxBodyBytes is the most of a provider's answer the client reads. A longer
// answer is not understood, so it is classified "maybe sent".
const MaxBodyBytes = 1 << 20

// BreakerSettings configure the circuit breaker that guards a provider. Only
// provider-health failures count: timeouts, connection errors and 5xx
// answers. Declines, other 4xx and 409 do not, since they say nothing about
// the provider's health.
type BreakerSettings struct {
	// ConsecutiveFailures opens the breaker. Defaults to 5. The field is
	// unsigned, so -1 cannot say "off": math.MaxUint32 keeps the breaker
	// closed.
	ConsecutiveFailures uint32
	// OpenFor is how long the breaker stays open before letting a probe
	// through. Defaults to 30 s.
	OpenFor time.Duration
	// HalfOpenRequests is how many probes may run while half-open.
	// Defaults to 1.
	HalfOpenRequests uint32
}

// breakerFailure marks a 5xx answer as a failure for the breaker while the
// answer itself still reaches the caller.
type breakerFailure struct{ resp *http.Response }

func (e *breakerFailure) Error() string {
	return fmt.Sprintf("provider answered %d", e.resp.StatusCode)
}

// breakerTransport sends every HTTP request through the provider's breaker.
type breakerTransport struct {
	base http.RoundTripper
	cb   *gobreaker.CircuitBreaker[*http.Response]
	// replay, when set, tells a replayed stored answer: a provider that
	// stored a 500 under a key replays it to every resend, and those
	// replays say nothing about its health now.
	replay ReplayDetector
}

func (t *breakerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.cb.Execute(func() (*http.Response, error) {
		resp, err := t.base.RoundTrip(req)
		if err == nil && resp.StatusCode >= 500 && (t.replay == nil || !t.replay.Replayed(resp.StatusCode, resp.Header)) {
			return resp, &breakerFailure{resp}
		}
		return resp, err
	})
	var bf *breakerFailure
	if errors.As(err, &bf) {
		return bf.resp, nil
	}
	return resp, err
}

// newBreaker builds the breaker of provider name from s, logging its state
// changes and counting them in tel (payonce.breaker.state_changes).
func newBreaker(name string, s BreakerSettings, log *slog.Logger, tel *telemetry) *gobreaker.CircuitBreaker[*http.Response] {
	if s.ConsecutiveFailures == 0 {
		s.ConsecutiveFailures = 5
	}
	if s.OpenFor == 0 {
		s.OpenFor = 30 * time.Second
	}
	if s.HalfOpenRequests == 0 {
		s.HalfOpenRequests = 1
	}
	return gobreaker.NewCircuitBreaker[*http.Response](gobreaker.Settings{
		Name:        name,
		MaxRequests: s.HalfOpenRequests,
		Timeout:     s.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= s.ConsecutiveFailures },
		// A caller that gives up says nothing about the provider's health.
		IsExcluded: func(err error) bool { return errors.Is(err, context.Canceled) },
		OnStateChange: func(name string, from, to gobreaker.State) {
			log.Warn("payonce: circuit breaker state changed", "provider", name, "from", from.String(), "to", to.String())
			tel.breakerChanged(to.String())
		},
	})
}

// httpLayer is the client's HTTP stack: go-retryablehttp over the provider's
// breaker over the base transport, with one policy for attempts (POSTs) and
// one for lookups (GETs).
type httpLayer struct {
	send    *retryablehttp.Client
	read    *retryablehttp.Client
	breaker *gobreaker.CircuitBreaker[*http.Response]
	probes  uint32 // the breaker's MaxRequests when half-open
}

// breakerRefuses reports whether the provider's breaker would refuse a
// request now: open, or half-open with its probes all taken. A request it
// refuses never leaves the process.
func (l *httpLayer) breakerRefuses() bool {
	switch l.breaker.State() {
	case gobreaker.StateOpen:
		return true
	case gobreaker.StateHalfOpen:
		return l.breaker.Counts().Requests >= l.probes
	}
	return false
}

func newHTTPLayer(cfg *Config, tel *telemetry) *httpLayer {
	base := cfg.HTTPClient.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cb := newBreaker(cfg.Provider.Name(), cfg.Breaker, cfg.Logger, tel)
	replay, _ := cfg.Provider.(ReplayDetector)
	hc := &http.Client{
		Transport:     &breakerTransport{base: base, cb: cb, replay: replay},
		CheckRedirect: cfg.HTTPClient.CheckRedirect,
		Jar:           cfg.HTTPClient.Jar,
		// No client-wide timeout: each attempt and lookup has its own
		// deadline through its context.
	}
	backoff := func(minWait, maxWait time.Duration, n int, resp *http.Response) time.Duration {
		return cfg.Retry.backoff(n, 0, cfg.Random)
	}
	logHook := func(_ retryablehttp.Logger, req *http.Request, n int) {
		if n > 0 {
			// Debug: a retry inside one attempt or lookup is the design at
			// work, and what it led to is recorded (and logged) by the
			// attempt loop. Method and path only: headers carry the
			// credentials.
			cfg.Logger.DebugContext(req.Context(), "payonce: retrying transmission", semconv.LogKeyOperation, operationOf(req.Context()),
				"method", req.Method, "path", req.URL.Path, "retry", n)
		}
	}
	mk := func(retries int, check retryablehttp.CheckRetry) *retryablehttp.Client {
		return &retryablehttp.Client{
			HTTPClient: hc,
			// No logger of its own: go-retryablehttp logs every failed
			// transmission at ERROR, without the operation, while each is
			// a fault the design expects (a refused dial, a 502 on a
			// lookup). logHook logs its retries instead, and the attempt
			// loop what came of them.
			Logger:         nil,
			RetryWaitMin:   cfg.Retry.BaseDelay,
			RetryWaitMax:   cfg.Retry.MaxDelay,
			RetryMax:       retries,
			CheckRetry:     check,
			Backoff:        backoff,
			ErrorHandler:   retryablehttp.PassthroughErrorHandler,
			RequestLogHook: logHook,
		}
	}
	return &httpLayer{
		send:    mk(onOrZero(cfg.Retry.DialRetries), sendRetryPolicy),
		read:    mk(onOrZero(cfg.Retry.LookupRetries), readRetryPolicy),
		breaker: cb,
		probes:  max(cfg.Breaker.HalfOpenRequests, 1), // newBreaker's default: 0 is 1
	}
}

// sendRetryPolicy replaces go-retryablehttp's method-blind default for
// requests that move money. Within one journaled attempt it retransmits only
// when the transmission provably wrote nothing: the transport was asked for
// a connection and never got one (DNS failure, refused dial, TLS handshake
// failure). It reads the attempt's connection trace itself, because the
// error alone proves nothing: a tls.RecordHeaderError, say, also arrives
// when the server's answer is garbled after the whole request was written.
// Every answer and every other error goes back to the attempt loop, which
// looks up the status before anything is sent again.
func sendRetryPolicy(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil || err == nil {
		return false, nil
	}
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return false, nil
	}
	return traceOf(ctx).wroteNothing() && neverSent(err), nil
}

// sendTrace counts, for one attempt, what the transport reported through
// httptrace: requests for a connection, connections obtained, and
// transmissions whose headers were written. It also carries the id of the
// operation the attempt serves, for the HTTP layer's log records
// (operationOf), so that one context value holds both.
type sendTrace struct {
	getConns, gotConns, wrote atomic.Int32
	opID                      string
}

type sendTraceKey struct{}

// withSendTrace attaches a fresh trace of an attempt of operation opID to
// ctx.
func withSendTrace(ctx context.Context, opID string) (context.Context, *sendTrace) {
	st := &sendTrace{opID: opID}
	ctx = context.WithValue(ctx, sendTraceKey{}, st)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn:      func(string) { st.getConns.Add(1) },
		GotConn:      func(httptrace.GotConnInfo) { st.gotConns.Add(1) },
		WroteHeaders: func() { st.wrote.Add(1) },
	}), st
}

func traceOf(ctx context.Context) *sendTrace {
	st, _ := ctx.Value(sendTraceKey{}).(*sendTrace)
	return st
}

// wroteNothing reports whether the trace proves that no byte of the request
// left: the transport traced its connection setup (GetConn) and never got a
// connection to write on. A transport that does not trace proves nothing.
func (st *sendTrace) wroteNothing() bool {
	return st != nil && st.getConns.Load() > 0 && st.gotConns.Load() == 0
}

// readRetryPolicy retries lookups (GETs, safe to repeat) on transport errors,
// 429 and 5xx, but not while the breaker is open.
func readRetryPolicy(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, nil
	}
	if err != nil {
		return !errors.Is(err, gobreaker.ErrOpenState) && !errors.Is(err, gobreaker.ErrTooManyRequests), nil
	}
	return resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500, nil
}

// neverSent reports whether a transport error is of a kind that means no
// byte of the request reached the provider: the connection was never
// established (DNS failure, refused or unreachable dial, TLS handshake
// failure) or the breaker refused to send. Everything else, a timeout or a
// reset after the connection was up included, may have been processed. The
// kind is necessary, not sufficient: apart from a breaker refusal, the
// attempt's trace must also show that no connection was obtained
// (sendTrace.wroteNothing), since a TLS record error, for one, also comes
// after a request was written.
func neverSent(err error) bool {
	if breakerRefused(err) {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recErr tls.RecordHeaderError
	return errors.As(err, &certErr) || errors.As(err, &unknownAuth) || errors.As(err, &hostErr) || errors.As(err, &recErr)
}

// breakerRefused reports whether the circuit breaker refused to send.
func breakerRefused(err error) bool {
	return errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests)
}

// classifyTransportError turns an error from the HTTP layer into an outcome.
func classifyTransportError(err error) ledger.OutcomeClass {
	if neverSent(err) {
		return ledger.OutcomeNotSent
	}
	return ledger.OutcomeMaybeSent
}

// transmit sends one journaled attempt and classifies what came back. The
// attempt has already been recorded in the ledger (rule 2).
func (c *Client) transmit(ctx context.Context, sr SendRequest) (Outcome, string) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
	defer cancel()
	// Trace the connections and the transmissions that wrote the request.
	// net/http resends a request carrying an idempotency key header by
	// itself when a reused connection fails before an answer, and the first
	// transmission may have been processed; an answer that proves only its
	// own transmission was not processed (a 429) then proves nothing about
	// the attempt. A transport error proves "not sent" only if no
	// connection was ever obtained.
	actx, st := withSendTrace(actx, sr.OperationID)
	req, err := c.cfg.Provider.NewRequest(actx, sr)
	if err != nil {
		// Nothing left the process; the request was validated before it was
		// journaled, so this is an adapter bug or a cancelled context.
		return Outcome{Class: ledger.OutcomeNotSent}, "building request: " + err.Error()
	}
	if a, ok := c.cfg.Provider.(RequestAuthorizer); ok {
		// The credential's own calls run outside the send trace: a
		// connection they open must not make a later transport error of
		// the attempt look like "maybe sent".
		tctx, tcancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
		err := a.AuthorizeRequest(tctx, lookupDoer{c: c.http.read, opID: sr.OperationID}, req)
		tcancel()
		if err != nil {
			// Nothing of the attempt left the process: the request is
			// sent only once it carries its credential.
			return Outcome{Class: ledger.OutcomeNotSent}, "authorizing request: " + err.Error()
		}
	}
	rreq, err := retryablehttp.FromRequest(withOperation(req, sr.OperationID))
	if err != nil {
		return Outcome{Class: ledger.OutcomeNotSent}, "building request: " + err.Error()
	}
	resp, err := c.http.send.Do(rreq)
	if err != nil {
		class := classifyTransportError(err)
		if class == ledger.OutcomeNotSent && !breakerRefused(err) && !st.wroteNothing() {
			// The error looks like "never connected", but a connection was
			// obtained (or the transport does not say): bytes may have left.
			class = ledger.OutcomeMaybeSent
		}
		return Outcome{Class: class}, err.Error()
	}
	defer resp.Body.Close()
	// One byte past the limit tells an answer that is too large.
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil || len(body) > MaxBodyBytes {
		// The provider answered but we cannot read what it said: it may
		// have processed the request.
		msg := fmt.Sprintf("answer %d larger than %d bytes", resp.StatusCode, MaxBodyBytes)
		if err != nil {
			msg = fmt.Sprintf("reading answer %d: %v", resp.StatusCode, err)
		}
		return Outcome{Class: ledger.OutcomeMaybeSent, HTTPStatus: resp.StatusCode}, msg
	}
	out := c.cfg.Provider.Classify(sr, resp.StatusCode, resp.Header, body)
	if out.HTTPStatus == 0 {
		out.HTTPStatus = resp.StatusCode
	}
	// slices.Contains is ledgerdriver.ParseOutcomeClass's test without the error
	// it builds.
	if !slices.Contains(ledger.OutcomeClasses, out.Class) ||
		(out.Class == ledger.OutcomeNotSent && resp.StatusCode >= 200 && resp.StatusCode < 300) {
		// A 2xx is never "not sent", and an unknown class is not understood:
		// both fall back to the safe side.
		out.Class = ledger.OutcomeMaybeSent
	}
	if out.Class == ledger.OutcomeNotSent && st.wrote.Load() > 1 {
		// The answer covers its own transmission only; an earlier one of
		// this attempt wrote the request and may have been processed.
		out.Class = ledger.OutcomeMaybeSent
		out.Message = "earlier transmission may have been processed; " + out.Message
	}
	var text string
	if out.Class != ledger.OutcomeSuccess {
		text = fmt.Sprintf("HTTP %d", resp.StatusCode)
		if out.Code != "" {
			text += " " + out.Code
		}
		if out.Message != "" {
			text += ": " + out.Message
		}
	}
	return out, text
}

// lookupDoer sends the GETs of the lookup of operation opID through the
// read policy.
type lookupDoer struct {
	c    *retryablehttp.Client
	opID string
}

func (d lookupDoer) Do(req *http.Request) (*http.Response, error) {
	rreq, err := retryablehttp.FromRequest(withOperation(req, d.opID))
	if err != nil {
		return nil, err
	}
	return d.c.Do(rreq)
}

type operationKey struct{}

// withOperation returns req with the id of the operation it serves in its
// context, for the HTTP layer's log records. It is set on the request the
// adapter built rather than on the context handed to the adapter, so that
// it holds whatever context the adapter used. A request whose context
// already names opID (an attempt's: its send trace carries the id, and the
// adapter built the request on that context) is returned as it is: copying
// it would change nothing operationOf reads.
func withOperation(req *http.Request, opID string) *http.Request {
	if operationOf(req.Context()) == opID {
		return req
	}
	return req.WithContext(context.WithValue(req.Context(), operationKey{}, opID))
}

// operationOf is the operation id withOperation put in ctx or, without
// one, the id of the attempt's send trace (withSendTrace), or "".
func operationOf(ctx context.Context) string {
	if id, ok := ctx.Value(operationKey{}).(string); ok {
		return id
	}
	if st := traceOf(ctx); st != nil {
		return st.opID
	}
	return ""
}

package mocks

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file is the provider-neutral half of every fake: the request pipeline
// (faults, authentication hook, idempotency layer, delivery), shared by the
// Stripe fake and by fakes of other providers. Provider wire formats live in
// the provider's own files, behind the dialect interface.

// coreConfig is the provider-neutral configuration of a fake: the options
// every fake's exported options type has.
type coreConfig struct {
	name       string // provider name for logs, e.g. "stripe"
	typ        string // the exported options type, e.g. "StripeOptions"
	clock      func() time.Time
	keyTTL     time.Duration
	seed       int64
	faultRates map[FaultKind]float64
	faultGETs  bool
	hangFor    time.Duration
	slowFor    time.Duration
	retryAfter time.Duration
	logger     *slog.Logger
}

// fakeOptions is what every fake's exported options type gives the core:
// its own validation and its provider-neutral half.
type fakeOptions interface {
	Validate() error
	coreConfig() coreConfig
}

// setUp is the setup every fake's handler constructor shares: it panics if
// opts do not validate (a wrong option is a bug in the test), then starts
// the core speaking d's dialect, with the provider's idempotency rule,
// idem, whose key TTL is the options' KeyTTL or, when that is 0, the
// provider's documented defaultTTL. Default credentials drawn from the
// core's ids come after it, and routes after those, so that a seed always
// gives the same ids.
func (h *fakeHandler) setUp(opts fakeOptions, defaultTTL time.Duration, idem idemPolicy, d dialect, records func(*Truth)) {
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	cfg := opts.coreConfig().withDefaults()
	idem.ttl = cmp.Or(cfg.keyTTL, defaultTTL)
	h.core = newCore(cfg, idem)
	h.core.d = d
	h.records = records
}

// call is one request as it moves through the pipeline.
type call struct {
	r         *http.Request
	method    string
	path      string
	route     string // the route pattern, e.g. "POST /v1/refunds"
	requestID string
	scope     string // idempotency scope (account / API key), set by authentication
	key       string // idempotency key, "" if none
	query     url.Values
	form      url.Values
	// body and canon are set for dialects with JSON bodies (jsonDialect):
	// the raw body and its canonical form (keys sorted, no insignificant
	// space), which the idempotency fingerprint covers. form is then empty.
	body  []byte
	canon string
	now   time.Time
}

// endpoint runs one route. executed reports whether execution began: only
// executed answers are stored under an idempotency key (requests that fail
// validation are not, so that a corrected retry may reuse the key).
type endpoint func(c *call) (resp *response, executed bool)

// dialect is the provider-specific half of the pipeline: how a provider
// names its headers and words the answers the pipeline itself produces.
type dialect interface {
	// keyHeader is the request header carrying the idempotency key.
	keyHeader() string
	// requestID returns a new request identifier, e.g. "req_...".
	requestID() string
	// authenticate returns the idempotency scope of the caller, or the
	// answer refusing it.
	authenticate(c *call) (scope string, deny *response)
	// malformed answers a body that could not be parsed.
	malformed(c *call, err error) *response
	// rateLimited answers a request stopped by the rate limiter.
	rateLimited(c *call, retryAfter time.Duration) *response
	// serverError answers a request whose execution failed inside the
	// provider (stored under the key like any executed answer).
	serverError(c *call) *response
	// keyMismatch answers a key reused with another request.
	keyMismatch(c *call) *response
	// keyInUse answers a key whose first request is still running.
	keyInUse(c *call) *response
	// deliver sets the per-delivery headers (request id, replay marker).
	deliver(h http.Header, c *call, replayed bool)
}

// unprocessedDialect is implemented by dialects whose 500 before anything
// was processed (FaultStored500) differs from serverError (Adyen may mark
// it Transient-Error: true).
type unprocessedDialect interface {
	dialect
	unprocessedError(c *call) *response
}

// jsonDialect is implemented by dialects whose POST bodies are JSON objects
// instead of forms (YooKassa, Checkout.com). The pipeline then reads the body
// with readJSON and fingerprints its canonical form.
type jsonDialect interface {
	dialect
	jsonBodies()
}

// formRouteDialect is implemented by JSON dialects with a few form-encoded
// routes (PayPal's OAuth2 token endpoint): formBody reports whether c's body
// is a form.
type formRouteDialect interface {
	jsonDialect
	formBody(c *call) bool
}

// jsonBody reports whether c's body is read as JSON (jsonDialect) rather
// than as a form.
func (k *core) jsonBody(c *call) bool {
	if f, ok := k.d.(formRouteDialect); ok && f.formBody(c) {
		return false
	}
	_, ok := k.d.(jsonDialect)
	return ok
}

// core is the state every fake shares: clock, ids, faults, keys, counters.
type core struct {
	cfg      coreConfig
	d        dialect
	ids      *idSource
	faults   *faultPlan
	idem     *idemStore
	counters *counters
	done     chan struct{}
	doneOnce sync.Once
}

func newCore(cfg coreConfig, idem idemPolicy) *core {
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	return &core{
		cfg:      cfg,
		ids:      newIDSource(cfg.seed),
		faults:   newFaultPlan(cfg.seed, cfg.faultRates, cfg.faultGETs),
		idem:     newIdemStore(idem),
		counters: newCounters(),
		done:     make(chan struct{}),
	}
}

func (k *core) now() time.Time { return k.cfg.clock() }

// close releases every request held by a hang or a slow fault.
func (k *core) close() { k.doneOnce.Do(func() { close(k.done) }) }

// wait sleeps d, or less if ctx ends or the fake closes. It reports whether
// the full duration passed.
func (k *core) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-k.done:
		return false
	}
}

// handle builds the handler for one route: pattern is the ServeMux pattern
// ("POST /v1/refunds"), or "" for the catch-all of unknown routes.
func (k *core) handle(pattern string, ep endpoint) http.HandlerFunc {
	route, routePath := "unknown", ""
	if pattern != "" {
		route = pattern
		if i := strings.IndexByte(pattern, ' '); i >= 0 {
			routePath = pattern[i+1:]
		} else {
			routePath = pattern
		}
	}
	return func(w http.ResponseWriter, r *http.Request) {
		c := &call{
			r:         r,
			method:    r.Method,
			path:      r.URL.Path,
			route:     route,
			requestID: k.d.requestID(),
			key:       r.Header.Get(k.d.keyHeader()),
			query:     r.URL.Query(),
			now:       k.now(),
		}
		k.counters.request(route)
		fault := k.faults.pick(faultRequest{method: c.method, path: c.path, routePath: routePath, key: c.key})
		k.serve(w, c, ep, fault)
	}
}

func (k *core) serve(w http.ResponseWriter, c *call, ep endpoint, fault FaultKind) {
	resp, replayed := k.answer(c, ep, fault)
	// Faults on the way back apply to whatever the answer was.
	switch fault {
	case FaultDropAfterProcessing:
		k.faults.record(fault)
		k.log(c, 0, replayed, fault)
		abortConnection(w)
		return
	case FaultHangAfterProcessing:
		k.faults.record(fault)
		if !k.wait(c.r.Context(), k.cfg.hangFor) && c.r.Context().Err() != nil {
			k.log(c, 0, replayed, fault)
			return // the client went away; nobody to answer
		}
	case FaultGatewayAfter502:
		k.faults.record(fault)
		resp, replayed = gatewayResponse(), false
	}
	k.write(w, c, resp, replayed, fault)
}

// answer runs the pipeline up to the answer: proxy, authentication, rate
// limiter, idempotency layer, endpoint. replayed reports a stored answer.
func (k *core) answer(c *call, ep endpoint, fault FaultKind) (resp *response, replayed bool) {
	// A proxy in front of the provider fails before anything happens.
	if fault == FaultGatewayBefore502 {
		k.faults.record(fault)
		return gatewayResponse(), false
	}
	scope, deny := k.d.authenticate(c)
	if deny != nil {
		return deny, false
	}
	c.scope = scope
	// Rate limiters run before the idempotency layer: nothing is stored.
	if fault == FaultRateLimit429 {
		k.faults.record(fault)
		return k.d.rateLimited(c, k.cfg.retryAfter), false
	}
	if k.jsonBody(c) {
		body, canon, err := readJSON(c.r)
		if err != nil {
			return k.d.malformed(c, err), false
		}
		c.body, c.canon, c.form = body, canon, url.Values{}
	} else {
		form, err := readForm(c.r)
		if err != nil {
			return k.d.malformed(c, err), false
		}
		c.form = form
	}

	keyed := c.method == http.MethodPost && c.key != ""
	id := idemID{scope: c.scope, key: c.key}
	if keyed {
		dec, stored := k.idem.begin(id, callFingerprint(c), c.now, k.idem.ttlOf(c))
		k.counters.idem(dec)
		switch dec {
		case idemReplay:
			resp, replayed = stored.current(), true
		case idemMismatch:
			resp = k.d.keyMismatch(c)
		case idemInUse:
			resp = k.d.keyInUse(c)
		}
	}
	if fault == FaultSlow {
		k.faults.record(fault)
		// The provider keeps working when the client gives up.
		k.wait(context.Background(), k.cfg.slowFor)
		c.now = k.now()
	}
	if resp != nil {
		return resp, replayed
	}
	executed := true
	stored := (*response)(nil)
	switch fault {
	case FaultStored500:
		k.faults.record(fault)
		if u, ok := k.d.(unprocessedDialect); ok {
			resp = u.unprocessedError(c)
		} else {
			resp = k.d.serverError(c)
		}
	case FaultProcessed500:
		resp, executed = ep(c)
		if executed {
			// The endpoint ran (money may have moved); the provider then
			// fails and answers its own 500. Which of the two answers the
			// idempotency layer keeps is the provider's rule.
			k.faults.record(fault)
			real := resp
			resp = k.d.serverError(c)
			if k.idem.policy.keepRealAfter500 {
				stored = real
			}
		}
	default:
		resp, executed = ep(c)
	}
	if stored == nil {
		stored = resp
	}
	if keyed {
		if executed {
			k.idem.finish(id, stored)
		} else {
			k.idem.abandon(id)
		}
	}
	return resp, false
}

func (k *core) write(w http.ResponseWriter, c *call, resp *response, replayed bool, fault FaultKind) {
	h := w.Header()
	for name, vs := range resp.header {
		h[name] = append([]string(nil), vs...)
	}
	k.d.deliver(h, c, replayed)
	h.Set("Content-Length", strconv.Itoa(len(resp.body)))
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
	k.log(c, resp.status, replayed, fault)
}

// log records one answered request. It never logs headers: the
// Authorization header carries the caller's secret key.
func (k *core) log(c *call, status int, replayed bool, fault FaultKind) {
	level := slog.LevelDebug
	if fault != FaultNone {
		level = slog.LevelInfo
	}
	k.cfg.logger.Log(context.Background(), level, "mocks: request",
		"provider", k.cfg.name,
		"method", c.method,
		"path", c.path,
		"route", c.route,
		"request_id", c.requestID,
		"status", status,
		"replayed", replayed,
		"fault", fault.String(),
	)
}

// maxBodyBytes is the largest request body a fake reads: the most the
// payonce client itself reads of an answer (payonce.MaxBodyBytes; a test
// keeps the two equal), so that the package does not import the SDK it
// is a fake for.
const maxBodyBytes = 1 << 20

// readBody reads a request body of at most maxBodyBytes; a missing body
// reads as empty.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxBodyBytes {
		return nil, errBodyTooLarge
	}
	return b, nil
}

// readForm parses an application/x-www-form-urlencoded body (any method).
func readForm(r *http.Request) (url.Values, error) {
	b, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return url.Values{}, nil
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		return nil, errNotForm
	}
	return url.ParseQuery(string(b))
}

// readJSON reads a JSON object body (any method) and returns it with its
// canonical form: the same object always gives the same canonical string,
// whatever its key order or spacing. An empty body is no object ("", nil).
func readJSON(r *http.Request) (body []byte, canon string, err error) {
	b, err := readBody(r)
	if err != nil {
		return nil, "", err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, "", nil
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return nil, "", errNotJSON
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, "", errBadJSON
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, "", errBadJSON
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, "", errBadJSON
	}
	c, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return nil, "", errBadJSON
	}
	return b, string(c), nil
}

type bodyError string

func (e bodyError) Error() string { return string(e) }

const (
	errBodyTooLarge = bodyError("request body larger than 1 MiB")
	errNotForm      = bodyError("request body must be application/x-www-form-urlencoded")
	errNotJSON      = bodyError("request body must be application/json")
	errBadJSON      = bodyError("request body must be one JSON object")
)

// gatewayResponse is what a proxy in front of any provider says.
func gatewayResponse() *response {
	body := []byte("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n")
	return &response{
		status: http.StatusBadGateway,
		header: http.Header{"Content-Type": {"text/html"}},
		body:   body,
	}
}

// abortConnection closes the client's connection without an answer.
func abortConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
		return
	}
	// HTTP/2 and wrapped writers cannot be hijacked: abort the stream.
	panic(http.ErrAbortHandler)
}

// retryAfterSeconds renders d as whole seconds for a Retry-After header.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(int(math.Ceil(d.Seconds())))
}

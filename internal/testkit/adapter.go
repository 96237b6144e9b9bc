// Helpers for the provider adapters' tests.

package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
)

// DoerFunc is a payonce.HTTPDoer made of a function.
type DoerFunc func(*http.Request) (*http.Response, error)

// Do calls f.
func (f DoerFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// trackedBody is an answer body that records whether it was closed.
type trackedBody struct {
	io.Reader
	Closed bool
}

// Close records the close.
func (b *trackedBody) Close() error { b.Closed = true; return nil }

// Header builds a header from name, value pairs.
func Header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// Respond is an answer with status, body and the header pairs kv.
func Respond(status int, body string, kv ...string) *http.Response {
	return &http.Response{StatusCode: status, Header: Header(kv...), Body: io.NopCloser(strings.NewReader(body))}
}

// WithKind turns r into an operation of kind k on the payment ref, for
// amount, without the charge-only fields (payment method, customer,
// description).
func WithKind(r payonce.SendRequest, k payonce.Kind, amount int64, ref string) payonce.SendRequest {
	r.Request.Kind = k
	r.Request.Amount = amount
	r.Request.PaymentRef = ref
	r.Request.PaymentMethod, r.Request.Customer, r.Request.Description = "", "", ""
	return r
}

// Build calls p.NewRequest and returns the request and its body.
func Build(t testing.TB, p payonce.Provider, r payonce.SendRequest) (*http.Request, string) {
	t.Helper()
	hr, err := p.NewRequest(context.Background(), r)
	require.NoError(t, err)
	b, err := io.ReadAll(hr.Body)
	require.NoError(t, err)
	return hr, string(b)
}

// DecodeJSON decodes a JSON object, with numbers as json.Number.
func DecodeJSON(t testing.TB, body string) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(body))
	d.UseNumber()
	require.NoError(t, d.Decode(&m))
	return m
}

// RequireInvalid checks that err is a *payonce.ValidationError
// (errors.Is(err, payonce.ErrInvalid)) on field whose text holds none of
// secrets, and returns it.
func RequireInvalid(t testing.TB, err error, field string, secrets ...string) *payonce.ValidationError {
	t.Helper()
	require.ErrorIs(t, err, payonce.ErrInvalid)
	var ve *payonce.ValidationError
	require.True(t, errors.As(err, &ve))
	require.Equal(t, field, ve.Field)
	for _, s := range secrets {
		require.NotContains(t, err.Error(), s)
	}
	return ve
}

// printed returns every way values may end up printed: under each fmt verb
// a careless log line might use, through String and GoString when they
// have them, and logged by slog as JSON. A leak test checks that no secret
// appears in any of them.
func printed(values ...any) []string {
	var texts []string
	for _, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%T"} {
			texts = append(texts, fmt.Sprintf(verb, v))
		}
		if s, ok := v.(fmt.Stringer); ok {
			texts = append(texts, s.String())
		}
		if s, ok := v.(fmt.GoStringer); ok {
			texts = append(texts, s.GoString())
		}
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("value", "v", v)
		texts = append(texts, buf.String())
	}
	return texts
}

// RequireLookupTransport checks p.Lookup against the transport: a
// transport error on failQ reaches the caller, and for q answered with
// status 200, 404 and 500 and body, every answer body is closed and every
// request is a GET (lookups only read).
func RequireLookupTransport(t *testing.T, p payonce.Provider, failQ, q payonce.LookupQuery, body string) {
	t.Helper()
	_, err := p.Lookup(context.Background(), DoerFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("connection reset")
	}), failQ)
	require.ErrorContains(t, err, "connection reset")

	for _, status := range []int{200, 404, 500} {
		b := &trackedBody{Reader: strings.NewReader(body)}
		var sent *http.Request
		_, _ = p.Lookup(context.Background(), DoerFunc(func(req *http.Request) (*http.Response, error) {
			sent = req
			return &http.Response{StatusCode: status, Header: http.Header{}, Body: b}, nil
		}), q)
		require.True(t, b.Closed, "status %d: body not closed", status)
		require.Equal(t, http.MethodGet, sent.Method, "lookups only read")
	}
}

// NewClient returns a payonce.Client for psp over a fresh, migrated SQLite
// ledger, on the clock now, with short retries, and the ledger. Both are
// closed when the test ends.
func NewClient(t *testing.T, psp payonce.Provider, now func() time.Time) (*payonce.Client, ledger.Store) {
	t.Helper()
	store, err := ledgersqlite.Open(filepath.Join(t.TempDir(), "ledger.db"), ledgersqlite.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	require.NoError(t, store.Migrate(context.Background()))
	client, err := payonce.New(providertest.ClientConfig(psp, store, now))
	require.NoError(t, err)
	return client, store
}

// E2E drives a payonce.Client end to end against an adapter's fake, with
// a SQLite ledger (NewClient) and one manual clock shared by the fake, the
// adapter and the client.
type E2E struct {
	Fake   providertest.Fake
	Clock  *mocks.ManualClock
	Store  ledger.Store
	Client *payonce.Client
	// Ctx bounds every call of a test to 30 s.
	Ctx context.Context
}

// NewE2E builds the adapter's environment (its fake and the adapter
// pointed at it, with the defaults of both; the fake is closed when the
// test ends) on a manual clock at 2026-11-30 12:00 UTC, and a Client on
// the same clock.
func NewE2E(t *testing.T, env func(*testing.T, providertest.Options) *providertest.Env) *E2E {
	t.Helper()
	clock := mocks.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	e := env(t, providertest.Options{Clock: clock})
	client, store := NewClient(t, e.Provider, clock.Now)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &E2E{Fake: e.Fake, Clock: clock, Store: store, Client: client, Ctx: ctx}
}

// Posts is how many POSTs the fake received on route (its route pattern,
// e.g. "/payments/{id}/captures").
func (e *E2E) Posts(route string) int { return e.Fake.Truth().Requests["POST "+route] }

// ---- shared checks of the provider adapters' tests ----
//
// Each adapter's tests keep their own tables (the provider's answers, its
// Config fields, its request rules: provider facts), written as slices of
// the *Case types below with every field named; the code that walks a
// table (the Require functions) is here, once.

// OpID is the operation id (and generation-0 key) of the charge every
// adapter test starts from (ChargeRequest).
const OpID = "0b6f3e1c-2c4d-5e6f-8a9b-0c1d2e3f4a5b"

// ChargeRequest is the charge every adapter test starts from: operation
// OpID under key OpID, references ["order", "42"], description "Order 42",
// with the provider's amount, currency, payment method, customer and
// caller metadata.
func ChargeRequest(amount int64, currency, method, customer string, md map[string]string) payonce.SendRequest {
	return payonce.SendRequest{
		OperationID: OpID,
		Key:         OpID,
		Request: payonce.Request{
			Kind:          payonce.KindCharge,
			Amount:        amount,
			Currency:      currency,
			References:    []string{"order", "42"},
			PaymentMethod: method,
			Customer:      customer,
			Description:   "Order 42",
			Metadata:      md,
		},
	}
}

// Adapter is an adapter under test, P, with the *http.Client HC whose own
// mock transport MT answers its requests.
type Adapter[P any] struct {
	P  P
	MT *httpmock.MockTransport
	HC *http.Client
}

// Setup builds an adapter with newP from cfg changed by mod, and an
// *http.Client whose own mock transport answers its requests (no global
// transport is touched).
func Setup[C, P any](t *testing.T, newP func(C) (P, error), cfg C, mod ...func(*C)) Adapter[P] {
	t.Helper()
	mt := httpmock.NewMockTransport()
	return Adapter[P]{P: New(t, newP, cfg, mod...), MT: mt, HC: &http.Client{Transport: mt}}
}

// New builds an adapter with newP from cfg changed by mod, which must
// succeed.
func New[C, P any](t testing.TB, newP func(C) (P, error), cfg C, mod ...func(*C)) P {
	t.Helper()
	for _, m := range mod {
		m(&cfg)
	}
	p, err := newP(cfg)
	require.NoError(t, err)
	return p
}

// Wire is how an adapter's requests must look on the wire.
type Wire struct {
	// Authorization is the whole Authorization header every request
	// carries.
	Authorization string
	// ContentType is the Content-Type of every POST.
	ContentType string
	// KeyHeader names the header that carries the idempotency key.
	KeyHeader string
	// Bad is the provider's answer to a lookup request that is not
	// well-formed (ServeGET).
	Bad func() *http.Response
}

// RequirePost checks that hr is a POST with the credentials, the content
// type, and key in KeyHeader exactly once.
func (w Wire) RequirePost(t testing.TB, hr *http.Request, key string) {
	t.Helper()
	require.Equal(t, http.MethodPost, hr.Method)
	require.Equal(t, w.Authorization, hr.Header.Get("Authorization"))
	require.Equal(t, w.ContentType, hr.Header.Get("Content-Type"))
	require.Equal(t, key, hr.Header.Get(w.KeyHeader))
	require.Equal(t, []string{key}, hr.Header.Values(w.KeyHeader))
}

// RequireBasicAuth checks that hr carries user and pass as HTTP Basic
// credentials.
func RequireBasicAuth(t testing.TB, hr *http.Request, user, pass string) {
	t.Helper()
	u, p, ok := hr.BasicAuth()
	require.True(t, ok)
	require.Equal(t, user, u)
	require.Equal(t, pass, p)
}

// ServeGET answers every GET of u on mt with answer() when it is a
// well-formed lookup: with the credentials, without an idempotency key (a
// lookup changes nothing) and without a body; any other request gets
// w.Bad(), which no lookup takes for the object.
func (w Wire) ServeGET(mt *httpmock.MockTransport, u string, answer func() *http.Response) {
	mt.RegisterResponder(http.MethodGet, u, func(req *http.Request) (*http.Response, error) {
		if req.Header.Get("Authorization") != w.Authorization || req.Header.Get(w.KeyHeader) != "" || req.ContentLength > 0 {
			return w.Bad(), nil
		}
		return answer(), nil
	})
}

// RoundTrip sends a.P's request for r through a.HC to a POST of u that
// answer answers (Send), and returns the request as the server received it, its
// body, and a.P's Outcome of the answer as the client read it.
func RoundTrip[P payonce.Provider](t *testing.T, a Adapter[P], u string, r payonce.SendRequest, answer *http.Response) (*http.Request, string, payonce.Outcome) {
	t.Helper()
	var got *http.Request
	var gotBody string
	a.MT.RegisterResponder(http.MethodPost, u, func(req *http.Request) (*http.Response, error) {
		got = req
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		gotBody = string(b)
		return answer, nil
	})
	o, _ := Send(t, a.P, a.HC, r)
	require.NotNil(t, got, "the request reached the server")
	return got, gotBody, o
}

// Send builds p's request for r, sends it with hc and classifies the
// answer. It returns the Outcome and the answer, whose body it has read
// and closed.
func Send(t *testing.T, p payonce.Provider, hc payonce.HTTPDoer, r payonce.SendRequest) (payonce.Outcome, *http.Response) {
	t.Helper()
	hr, err := p.NewRequest(context.Background(), r)
	require.NoError(t, err)
	resp, err := hc.Do(hr)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return p.Classify(r, resp.StatusCode, resp.Header, body), resp
}

// RequireScrubbed checks that msg, a text the adapter built from what the
// provider said, holds none of secrets and marks where it removed them
// ("[REDACTED]").
func RequireScrubbed(t testing.TB, msg string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		require.NotContains(t, msg, s)
	}
	require.Contains(t, msg, "[REDACTED]")
}

// ConfigCase is a Config that New must refuse: the ValidationError's
// field, and a hint its text holds.
type ConfigCase[C any] struct {
	Name  string
	Cfg   C
	Field string
	Hint  string
}

// RequireConfigErrors checks that newP refuses every case, with a
// *payonce.ValidationError on the case's field, holding its hint and none
// of secrets, and no Provider.
func RequireConfigErrors[C, P any](t *testing.T, newP func(C) (*P, error), cases []ConfigCase[C], secrets ...string) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			p, err := newP(tc.Cfg)
			require.Nil(t, p)
			RequireInvalid(t, err, tc.Field, secrets...)
			require.Contains(t, err.Error(), tc.Hint)
		})
	}
}

// RequestCase is a change to a valid request that NewRequest must refuse
// on field.
type RequestCase struct {
	Name  string
	Mod   func(*payonce.SendRequest)
	Field string
}

// RequireRequestErrors checks that p.NewRequest refuses base() changed by
// each case's Mod: no request, a *payonce.ValidationError on its field,
// none of secrets in the text.
func RequireRequestErrors(t *testing.T, p payonce.Provider, base func() payonce.SendRequest, cases []RequestCase, secrets ...string) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			r := base()
			tc.Mod(&r)
			hr, err := p.NewRequest(context.Background(), r)
			require.Nil(t, hr)
			RequireInvalid(t, err, tc.Field, secrets...)
		})
	}
}

// RequireLongReferences checks the payonce_refs value (read from a built
// body by refsOf) of a request r carrying 16 references of 100 characters,
// more than any provider's metadata value holds: at most limit long as
// length measures it, a JSON array of the leading references, ended by
// "...+N".
func RequireLongReferences(t *testing.T, p payonce.Provider, r payonce.SendRequest, refsOf func(body string) string, limit int, length func(string) int) {
	t.Helper()
	refs := make([]string, 16)
	for i := range refs {
		refs[i] = strings.Repeat(string(rune('a'+i)), 100)
	}
	r.Request.References = refs
	_, body := Build(t, p, r)
	v := refsOf(body)
	require.LessOrEqual(t, length(v), limit)
	var got []string
	require.NoError(t, json.Unmarshal([]byte(v), &got))
	require.Equal(t, refs[:len(got)-1], got[:len(got)-1])
	require.Regexp(t, `^\.\.\.\+\d+$`, got[len(got)-1])
}

// JSONRefs reads the payonce_refs metadata of a JSON request body.
func JSONRefs(t *testing.T) func(string) string {
	return func(body string) string {
		return DecodeJSON(t, body)["metadata"].(map[string]any)["payonce_refs"].(string)
	}
}

// ClassifyWant is what Classify must answer for one case.
type ClassifyWant struct {
	Class      ledger.OutcomeClass
	Processing bool
	Ref        string
	Code       string // checked when set
	Decline    string
	Msg        string // a substring of Message, checked when set
	RetryAfter time.Duration
	Replayed   bool
	RequestID  string // checked when set, or always with ExactRequestID
}

// ClassifyCase is one answer to an attempt r: status, header pairs, body.
type ClassifyCase struct {
	Name   string
	R      payonce.SendRequest
	Status int
	Hdr    []string
	Body   string
	Want   ClassifyWant
}

// ClassifyChecks are what an adapter's Classify table adds to every case.
type ClassifyChecks struct {
	// ExactRequestID compares RequestID even when the case leaves it
	// empty.
	ExactRequestID bool
	// Each checks what holds for every answer of the provider.
	Each func(t *testing.T, o payonce.Outcome)
}

// RequireClassify checks p.Classify against every case: the class,
// Processing, ProviderRef, HTTPStatus, RetryAfter, Replayed, DeclineCode,
// and Code, RequestID and Message when the case sets them; every Message
// is valid UTF-8 and bounded.
func RequireClassify(t *testing.T, p payonce.Provider, cases []ClassifyCase, checks ClassifyChecks) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			o := p.Classify(tc.R, tc.Status, Header(tc.Hdr...), []byte(tc.Body))
			w := tc.Want
			require.Equal(t, w.Class, o.Class)
			require.Equal(t, w.Processing, o.Processing, "Processing")
			require.Equal(t, w.Ref, o.ProviderRef, "ProviderRef")
			require.Equal(t, tc.Status, o.HTTPStatus)
			require.Equal(t, w.RetryAfter, o.RetryAfter, "RetryAfter")
			require.Equal(t, w.Replayed, o.Replayed, "Replayed")
			if w.Code != "" {
				require.Equal(t, w.Code, o.Code)
			}
			if w.RequestID != "" || checks.ExactRequestID {
				require.Equal(t, w.RequestID, o.RequestID)
			}
			require.Equal(t, w.Decline, o.DeclineCode)
			if w.Msg != "" {
				require.Contains(t, o.Message, w.Msg)
			}
			require.LessOrEqual(t, len(o.Message), 1100)
			require.True(t, utf8.ValidString(o.Message))
			if checks.Each != nil {
				checks.Each(t, o)
			}
		})
	}
}

// LeakCheck is what an adapter's leak test feeds through the adapter, in
// every way a secret could escape it.
type LeakCheck struct {
	// Secrets must appear in no text (each credential, and the part of a
	// key after its public prefix).
	Secrets []string
	// Values are printed every way (printed): Config, *Config, Provider,
	// *Provider.
	Values []any
	// Errors are the adapter's errors (New, NewRequest, Lookup).
	Errors []error
	// Provider classifies Echo, a body repeating the secrets, under each
	// of Statuses, for Request.
	Provider payonce.Provider
	Request  payonce.SendRequest
	Statuses []int
	Header   http.Header
	Echo     string
	// Texts are any other texts the adapter produced (a 2xx Outcome, a
	// LookupResult), already formatted.
	Texts []string
}

// RequireNoLeak checks that no secret appears anywhere the LeakCheck
// reaches: printed values (Values must print "[REDACTED]" somewhere),
// error texts (plain and %+v), Outcomes (%+v and JSON) and Texts.
func RequireNoLeak(t *testing.T, c LeakCheck) {
	t.Helper()
	texts := append(printed(c.Values...), c.Texts...)
	for _, err := range c.Errors {
		require.Error(t, err)
		texts = append(texts, err.Error(), fmt.Sprintf("%+v", err))
	}
	for _, status := range c.Statuses {
		o := c.Provider.Classify(c.Request, status, c.Header, []byte(c.Echo))
		j, _ := json.Marshal(o)
		texts = append(texts, fmt.Sprintf("%+v", o), string(j))
	}
	for _, s := range texts {
		for _, secret := range c.Secrets {
			require.NotContains(t, s, secret)
		}
	}
	for _, v := range c.Values {
		require.Contains(t, fmt.Sprintf("%v", v), "[REDACTED]")
	}
}

// ByID indexes JSON objects by their "id".
func ByID(items ...string) map[string]string {
	out := map[string]string{}
	for _, it := range items {
		var v struct {
			ID string `json:"id"`
		}
		if json.Unmarshal([]byte(it), &v) == nil && v.ID != "" {
			out[v.ID] = it
		}
	}
	return out
}

// ServeByID answers every GET of base+prefix/{id} on mt with objs[id]
// (respond(200, ...)), or missing for the others, counting the reads in
// reads (when not nil).
func ServeByID(mt *httpmock.MockTransport, urlPrefix string, objs map[string]string, reads map[string]int,
	respond func(int, string) *http.Response, missing func() *http.Response) {
	mt.RegisterRegexpResponder(http.MethodGet, regexp.MustCompile(`^`+regexp.QuoteMeta(urlPrefix)+`/[^/?]+$`), func(req *http.Request) (*http.Response, error) {
		id := path.Base(req.URL.Path)
		if reads != nil {
			reads[id]++
		}
		body, ok := objs[id]
		if !ok {
			return missing(), nil
		}
		return respond(200, body), nil
	})
}

// LookupErrorCase is a lookup that must fail when the GET of URL (a path
// under the adapter's base URL) answers Status and Body, and whether its
// error is temporary.
type LookupErrorCase struct {
	Name      string
	Q         payonce.LookupQuery
	URL       string
	Status    int
	Body      string
	Temporary bool
}

// RequireLookupErrors checks that Lookup fails for every case on the
// provider and client serve returns (a fresh adapter whose transport
// answers the case), with an empty result and none of secrets in the
// error; an error of the adapter's APIError type E says whether it is
// Temporary as the case does (and passes each, when set), and any other
// error is not temporary.
func RequireLookupErrors[E interface {
	error
	Temporary() bool
}](t *testing.T, serve func(*testing.T, LookupErrorCase) (payonce.Provider, payonce.HTTPDoer), cases []LookupErrorCase, each func(*testing.T, E), secrets ...string) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			p, hc := serve(t, tc)
			res, err := p.Lookup(context.Background(), hc, tc.Q)
			require.Error(t, err)
			require.Equal(t, payonce.LookupResult{}, res)
			for _, s := range secrets {
				require.NotContains(t, err.Error(), s)
			}
			var ae E
			if errors.As(err, &ae) {
				require.Equal(t, tc.Temporary, ae.Temporary(), "Temporary: %v", err)
				if each != nil {
					each(t, ae)
				}
			} else {
				require.False(t, tc.Temporary, "a temporary failure should be an *APIError: %v", err)
			}
		})
	}
}

// ReadCase is an object a lookup reads by id, and what it must say.
type ReadCase struct {
	Name, Body    string
	State         payonce.LookupState
	Code, Decline string
}

// RequireReadByID checks p.Lookup of q, whose q.ProviderRef the ledger
// knows, for every case: serve returns a fresh adapter whose transport
// answers the read of that id with the case's body. The answer is the
// object's state and codes, with the id as ProviderRef and Refs, and Lag
// 0 (a read by id is consistent); with calls > 0, exactly that many
// requests were sent.
func RequireReadByID(t *testing.T, serve func(*testing.T, string) (payonce.Provider, payonce.HTTPDoer, *httpmock.MockTransport),
	q payonce.LookupQuery, cases []ReadCase, calls int) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			p, hc, mt := serve(t, tc.Body)
			res, err := p.Lookup(context.Background(), hc, q)
			require.NoError(t, err)
			require.Equal(t, tc.State, res.State)
			require.Equal(t, q.ProviderRef, res.ProviderRef)
			require.Equal(t, []string{q.ProviderRef}, res.Refs)
			require.Equal(t, tc.Code, res.Code)
			require.Equal(t, tc.Decline, res.DeclineCode)
			require.Zero(t, res.Lag, "a read by id is consistent")
			if calls > 0 {
				require.Equal(t, calls, mt.GetTotalCallCount())
			}
		})
	}
}

// RequireSameBytes checks that p.NewRequest(r), which built hr with body,
// is the same request on every attempt: 20 more builds give the same
// bytes and URL, whatever the map order, and hr.GetBody (which an HTTP
// layer uses to resend) and ContentLength give that body too.
func RequireSameBytes(t *testing.T, p payonce.Provider, r payonce.SendRequest, hr *http.Request, body string) {
	t.Helper()
	for range 20 {
		hr2, body2 := Build(t, p, r)
		require.Equal(t, body, body2, "the same bytes on every attempt")
		require.Equal(t, hr.URL.String(), hr2.URL.String())
	}
	rc, err := hr.GetBody()
	require.NoError(t, err)
	again, _ := io.ReadAll(rc)
	require.Equal(t, body, string(again))
	require.EqualValues(t, len(body), hr.ContentLength)
}

// Agreement is what Classify (the object as the answer to a send) and
// Lookup (the object read back) must both say of one object.
type Agreement struct {
	Class      ledger.OutcomeClass
	Processing bool
	State      payonce.LookupState // "" when the lookup is an error
	Code       string
	Decline    string
	// Contradict: the object is not the request's. Both readings report
	// a Contradiction, and the lookup decides nothing.
	Contradict bool
}

// AgreeChecks are what an adapter's agreement table adds to every case.
type AgreeChecks struct {
	// SameMessage: a refusal's Message is the lookup's too.
	SameMessage bool
	// MaybeSentNotFound: an object Classify leaves maybe_sent reads as
	// not found (a resend with the same key completes it).
	MaybeSentNotFound bool
}

// RequireAgree checks that the Outcome o and the lookup's res (and err)
// of one object say want, and agree with each other: a success is
// "succeeded", a processing success "processing", a refusal "failed" with
// the same codes. Neither is a replay, nor contradicted unless want is.
func RequireAgree(t *testing.T, want Agreement, o payonce.Outcome, res payonce.LookupResult, err error, checks AgreeChecks) {
	t.Helper()
	require.Equal(t, want.Class, o.Class, "Classify: %s", o.Message)
	require.Equal(t, want.Processing, o.Processing, "Classify Processing")
	require.False(t, o.Replayed)
	if want.Contradict {
		require.NotEmpty(t, o.Contradiction)
		require.NoError(t, err)
		require.NotEmpty(t, res.Contradiction, "Lookup reports the same contradiction")
		require.NotEqual(t, payonce.LookupSucceeded, res.State)
		require.NotEqual(t, payonce.LookupFailed, res.State)
		return
	}
	require.Empty(t, o.Contradiction)
	if want.State == "" {
		require.Error(t, err, "Lookup of a status the adapter cannot read")
		return
	}
	require.NoError(t, err)
	require.Equal(t, want.State, res.State, "Lookup: %s", res.Message)
	require.Empty(t, res.Contradiction)
	switch o.Class {
	case ledger.OutcomeSuccess:
		if o.Processing {
			require.Equal(t, payonce.LookupProcessing, res.State)
		} else {
			require.Equal(t, payonce.LookupSucceeded, res.State)
		}
	case ledger.OutcomeRefused:
		require.Equal(t, payonce.LookupFailed, res.State)
		require.Equal(t, want.Code, o.Code)
		require.Equal(t, o.Code, res.Code)
		require.Equal(t, want.Decline, o.DeclineCode)
		require.Equal(t, o.DeclineCode, res.DeclineCode)
		if checks.SameMessage {
			require.Equal(t, o.Message, res.Message)
		}
	case ledger.OutcomeMaybeSent:
		if checks.MaybeSentNotFound {
			require.Equal(t, payonce.LookupNotFound, res.State, "a resend with the same key completes it")
		}
	}
}

// LookupCase is a lookup of Q on a fresh adapter whose transport Serve
// answers: it finds an object that is not the operation's (Contradiction
// names the difference), or fails (Err, part of the error).
type LookupCase[P any] struct {
	Name  string
	Q     payonce.LookupQuery
	Serve func(*testing.T, Adapter[P])
	// Contradiction is part of the result's Contradiction; "" when Err is
	// set.
	Contradiction string
	// Err is part of the error the lookup must fail with; "" when it must
	// succeed.
	Err string
	// Check, when set, checks more of the result.
	Check func(*testing.T, payonce.LookupResult)
}

// RequireLookups runs every case on an adapter from setup.
func RequireLookups[P payonce.Provider](t *testing.T, setup func(*testing.T) Adapter[P], cases []LookupCase[P]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			a := setup(t)
			tc.Serve(t, a)
			res, err := a.P.Lookup(context.Background(), a.HC, tc.Q)
			if tc.Err != "" {
				require.ErrorContains(t, err, tc.Err)
				return
			}
			require.NoError(t, err)
			require.Contains(t, res.Contradiction, tc.Contradiction)
			if tc.Check != nil {
				tc.Check(t, res)
			}
		})
	}
}

// NewCase is a Config that New must accept, and what the provider it
// builds says of itself.
type NewCase[C any] struct {
	Name string
	Cfg  C
	Info payonce.ProviderInfo
	// Lag is what the adapter's lag (its search, list, settle or webhook
	// lag) is.
	Lag time.Duration
	// BaseURL, when set, is the base URL its String shows.
	BaseURL string
}

// RequireNew checks every case: newP accepts its Config, and the provider
// is named name, has the case's Info and lag (read with lag), and shows
// its BaseURL.
func RequireNew[C any, P interface {
	payonce.Provider
	String() string
}](t *testing.T, newP func(C) (P, error), name string, lag func(P) time.Duration, cases ...NewCase[C]) {
	t.Helper()
	// Building a provider takes no time: the cases run one after another.
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			p, err := newP(tc.Cfg)
			require.NoError(t, err)
			require.Equal(t, name, p.Name())
			require.Equal(t, tc.Info, p.Info())
			require.Equal(t, tc.Lag, lag(p))
			if tc.BaseURL != "" {
				require.Contains(t, p.String(), "BaseURL:"+tc.BaseURL+" ")
			}
		})
	}
}

// StateCase is an object a lookup reads, and the state and code it must
// give; with Err, the lookup must fail instead.
type StateCase struct {
	Name, Body string
	Q          payonce.LookupQuery
	State      payonce.LookupState
	Code       string
	Err        bool
}

// RequireStates checks p.Lookup of every case's Q, on the provider and
// client serve returns (a fresh adapter whose transport answers the read
// with the case's body). A read by id is consistent: its Lag is 0.
func RequireStates(t *testing.T, serve func(*testing.T, string) (payonce.Provider, payonce.HTTPDoer), cases []StateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			p, hc := serve(t, tc.Body)
			res, err := p.Lookup(context.Background(), hc, tc.Q)
			if tc.Err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.State, res.State)
			require.Equal(t, tc.Code, res.Code)
			require.Zero(t, res.Lag, "a read by id is consistent")
		})
	}
}

// RequireActionFallback checks the lookups of a capture or cancel by its
// payment on p, whose transport answers the read of payment ref with a
// canceled payment and of payment gone with a 404: a cancel with no
// PaymentRef reads its ProviderRef, a capture with neither fails naming
// PaymentRef, and one of a payment that is gone is not found. query
// builds the adapter's lookup of kind with a payment and provider
// reference.
func RequireActionFallback(t *testing.T, p payonce.Provider, hc payonce.HTTPDoer, query func(payonce.Kind, string, string) payonce.LookupQuery, ref, gone string) {
	t.Helper()
	res, err := p.Lookup(context.Background(), hc, query(payonce.KindCancel, "", ref))
	require.NoError(t, err, "ProviderRef is used when PaymentRef is empty")
	require.Equal(t, payonce.LookupSucceeded, res.State)
	_, err = p.Lookup(context.Background(), hc, query(payonce.KindCapture, "", ""))
	require.ErrorContains(t, err, "PaymentRef")
	res, err = p.Lookup(context.Background(), hc, query(payonce.KindCapture, gone, ""))
	require.NoError(t, err)
	require.Equal(t, payonce.LookupNotFound, res.State)
}

// RequireMalformed checks that parse (an adapter's ParseWebhook of a
// genuine delivery of body) refuses every one of bodies as
// ErrWebhookMalformed, never as unauthenticated.
func RequireMalformed(t *testing.T, parse func(body string) error, bodies map[string]string) {
	t.Helper()
	for name, body := range bodies {
		err := parse(body)
		require.ErrorIs(t, err, payonce.ErrWebhookMalformed, name)
		require.NotErrorIs(t, err, payonce.ErrWebhookUnauthenticated, name)
	}
}

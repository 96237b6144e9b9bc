package paypal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// PayPal's REST calls carry an OAuth2 access token that the adapter gets
// with the client credentials: POST /v1/oauth2/token, HTTP Basic
// client_id:secret, grant_type=client_credentials, answered with
// {access_token, token_type, expires_in} (paypal/PayPal-TypeScript-Server-SDK,
// src/controllers/oAuthAuthorizationController.ts and src/models/oAuthToken.ts;
// https://developer.paypal.com/api/rest/authentication/). PayPal asks
// callers to reuse a token until it expires rather than fetch one per call
// (https://developer.paypal.com/api/rest/reference/rate-limiting/: "cache
// tokens"), so the token is cached until expires_in minus TokenMargin.

// TokenMargin is how long before PayPal's expiry the adapter stops using a
// token: a request signed just before the expiry may arrive just after it.
const TokenMargin = 5 * time.Minute

// maxTokenAnswer bounds the token answer the adapter reads.
const maxTokenAnswer = 64 << 10

// tokenTimeout bounds a token fetch started by a caller without a
// deadline.
const tokenTimeout = 30 * time.Second

// maxUsed bounds how many attempts' tokens are remembered for Classify.
const maxUsed = 4096

// token is one access token: gen numbers the tokens fetched, so that a 401
// invalidates the token only if it is the one the rejected request used.
type token struct {
	value   string
	gen     uint64
	expires time.Time
}

// tokenSource caches the access token. One fetch runs at a time
// (singleflight): requests that find no valid token wait for it rather
// than each asking PayPal for one.
type tokenSource struct {
	now   func() time.Time
	group singleflight.Group

	mu   sync.Mutex
	cur  *token // nil when there is no usable token
	gen  uint64
	seen []string // the last tokens fetched, for scrubbing
	// used maps an attempt's PayPal-Request-Id to the generation of the
	// token AuthorizeRequest gave it, until Classify reads its answer.
	used map[string]uint64
}

// valid returns the cached token while it is usable.
func (ts *tokenSource) valid() (token, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.cur == nil || !ts.now().Before(ts.cur.expires) {
		return token{}, false
	}
	return *ts.cur, true
}

// store caches a token PayPal gave with lifetime life (0: unknown, used
// for the request that fetched it only).
func (ts *tokenSource) store(value string, life time.Duration) token {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.gen++
	margin := TokenMargin
	if life <= 2*margin {
		margin = life / 2
	}
	t := token{value: value, gen: ts.gen, expires: ts.now().Add(life - margin)}
	ts.cur = &t
	ts.seen = append(ts.seen, value)
	if len(ts.seen) > 2 {
		ts.seen = ts.seen[len(ts.seen)-2:]
	}
	return t
}

// invalidate drops the cached token if it is generation gen: a 401 to a
// request signed with an older token says nothing about the newer one.
func (ts *tokenSource) invalidate(gen uint64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.cur != nil && ts.cur.gen == gen {
		ts.cur = nil
	}
}

// use records that the attempt with PayPal-Request-Id key carries the
// token of generation gen.
func (ts *tokenSource) use(key string, gen uint64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.used == nil {
		ts.used = map[string]uint64{}
	}
	if len(ts.used) >= maxUsed {
		// Attempts whose answers never came (transport errors) leave
		// entries behind: drop those of older tokens, then all.
		for k, g := range ts.used {
			if ts.cur == nil || g != ts.cur.gen {
				delete(ts.used, k)
			}
		}
		if len(ts.used) >= maxUsed {
			clear(ts.used)
		}
	}
	ts.used[key] = gen
}

// answered forgets the attempt with key; rejected (a 401) also drops the
// token it used. When the attempt's token is not known (forgotten under
// load), the current token is dropped: fetching one token too many costs a
// request, keeping a revoked one would fail every attempt until it expires.
func (ts *tokenSource) answered(key string, rejected bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	gen, ok := ts.used[key]
	delete(ts.used, key)
	if rejected && ts.cur != nil && (!ok || ts.cur.gen == gen) {
		ts.cur = nil
	}
}

// known returns the tokens to scrub from messages.
func (ts *tokenSource) known() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.seen...)
}

// AuthorizeRequest adds "Authorization: Bearer <access token>" to req, an
// attempt's request built by NewRequest. The token is the cached one while
// it is valid, else one fetched through hc (the client's reads: retries of
// 5xx and transport errors, breaker, timeouts), one fetch at a time. An
// error (the token could not be had) means the attempt was not sent; it
// never holds a credential or a token.
func (p *Provider) AuthorizeRequest(ctx context.Context, hc payonce.HTTPDoer, req *http.Request) error {
	if hc == nil {
		return errors.New("paypal: authorize request: nil HTTPDoer")
	}
	t, err := p.token(ctx, hc)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+t.value)
	if key := req.Header.Get("PayPal-Request-Id"); key != "" {
		p.tokens.use(key, t.gen)
	}
	return nil
}

// token returns a valid access token, fetching one when there is none.
func (p *Provider) token(ctx context.Context, hc payonce.HTTPDoer) (token, error) {
	if t, ok := p.tokens.valid(); ok {
		return t, nil
	}
	ch := p.tokens.group.DoChan("token", func() (any, error) {
		// Another flight may have stored one just before this began.
		if t, ok := p.tokens.valid(); ok {
			return t, nil
		}
		// The fetch serves every waiter: the caller that started it
		// going away must not fail the others, so it keeps only the
		// caller's deadline (or tokenTimeout).
		fctx, cancel := detach(ctx)
		defer cancel()
		return p.fetchToken(fctx, hc)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return token{}, res.Err
		}
		return res.Val.(token), nil
	case <-ctx.Done():
		return token{}, fmt.Errorf("paypal: access token: %w", ctx.Err())
	}
}

// detach is ctx without its cancellation, keeping its deadline, or
// tokenTimeout (real time: a context's deadline is never the adapter's
// clock) when it has none.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(context.WithoutCancel(ctx), dl)
	}
	return context.WithTimeout(context.WithoutCancel(ctx), tokenTimeout)
}

// tokenVia sends the token fetch (POST /v1/oauth2/token) through post and
// every other request through hc. An audit's lookups (LookupQuery.Audit)
// get a doer that sends only GETs: payonce refuses anything else there, so
// that no audit can move money. The token call moves none; it goes through
// Config.HTTPClient instead, to the same BaseURL.
type tokenVia struct {
	hc, post payonce.HTTPDoer
}

func (d tokenVia) Do(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, tokenPath) {
		return d.post.Do(req)
	}
	return d.hc.Do(req)
}

// tokenPath is PayPal's OAuth2 token endpoint.
const tokenPath = "/v1/oauth2/token"

// tokenAnswer is the token endpoint's answer (OAuthToken).
type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
}

// fetchToken asks PayPal for an access token and caches it.
func (p *Provider) fetchToken(ctx context.Context, hc payonce.HTTPDoer) (token, error) {
	const path = tokenPath
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.baseURL+path, strings.NewReader("grant_type=client_credentials"))
	if err != nil {
		return token{}, fmt.Errorf("paypal: access token: build POST %s: %w", path, err)
	}
	req.SetBasicAuth(string(p.clientID), string(p.clientSecret))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		// An http.Client error names the URL, never a header.
		return token{}, fmt.Errorf("paypal: access token: POST %s: %s", path, p.scrub(err.Error()))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenAnswer+1))
	if err != nil {
		return token{}, fmt.Errorf("paypal: access token: POST %s: read answer: %s", path, p.scrub(err.Error()))
	}
	if resp.StatusCode != http.StatusOK {
		detail := ""
		if e := decodeError(body); e != nil {
			detail = p.scrub(e.issue())
			if t := p.scrub(e.text()); t != "" {
				detail += ": " + t
			}
		}
		return token{}, errors.New(adapterkit.ErrorText("paypal: access token", http.MethodPost, path, resp.StatusCode, "debug id",
			p.scrub(resp.Header.Get("Paypal-Debug-Id")), detail))
	}
	var a tokenAnswer
	if len(body) > maxTokenAnswer || json.Unmarshal(body, &a) != nil {
		return token{}, fmt.Errorf("paypal: access token: POST %s: the answer is not a token", path)
	}
	switch {
	case a.AccessToken == "" || strings.ContainsFunc(a.AccessToken, adapterkit.NotToken):
		return token{}, fmt.Errorf("paypal: access token: POST %s: the answer holds no usable access_token", path)
	case a.TokenType != "" && !strings.EqualFold(a.TokenType, "Bearer"):
		return token{}, fmt.Errorf("paypal: access token: POST %s: token_type is %q, not Bearer", path, p.scrub(a.TokenType))
	}
	life := time.Duration(max(a.ExpiresIn, 0)) * time.Second
	if a.ExpiresIn > int64(24*time.Hour/time.Second) {
		life = 24 * time.Hour
	}
	return p.tokens.store(a.AccessToken, life), nil
}

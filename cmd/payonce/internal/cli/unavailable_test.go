package cli_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
)

// tcpProxy forwards 127.0.0.1 connections to a backend until it is cut,
// so that a test can take "the database" away without stopping the
// PostgreSQL other tests share.
type tcpProxy struct {
	ln      net.Listener
	backend string

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
	wg    sync.WaitGroup
}

func newTCPProxy(t *testing.T, backend string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &tcpProxy{ln: ln, backend: backend}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		p.Cut()
		p.wg.Wait()
	})
	return p
}

func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", p.backend)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, b) {
			return
		}
		p.wg.Add(2)
		go p.pipe(c, b)
		go p.pipe(b, c)
	}
}

// track remembers an accepted connection pair, or closes it if the proxy
// was cut meanwhile.
func (p *tcpProxy) track(c ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		for _, x := range c {
			x.Close()
		}
		return false
	}
	p.conns = append(p.conns, c...)
	return true
}

func (p *tcpProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// Cut closes the listener (new connections are refused) and every
// connection open through it (those in use fail).
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return
	}
	p.cut = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

// proxied returns the PostgreSQL target tg reached through a new proxy.
func proxied(t *testing.T, tg target) (target, *tcpProxy) {
	t.Helper()
	u, err := url.Parse(tg.ledger)
	require.NoError(t, err)
	p := newTCPProxy(t, u.Host)
	u.Host = p.Addr()
	tg.ledger = u.String()
	return tg, p
}

// A ledger that cannot be reached is its own exit code, not a usage error:
// nothing was sent. A ledger lost after the request left is exit 4: the
// charge may have moved money, and only reconciliation can say.
func TestLedgerUnavailable(t *testing.T) {
	t.Parallel()
	direct := pgTarget(t)
	fake := mocks.NewStripeHandler(mocks.StripeOptions{})
	var mu sync.Mutex
	var cutOnPost *tcpProxy
	posts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.Method == http.MethodPost && cutOnPost != nil {
			// The attempt was journaled (rule 2) before this request
			// left; the ledger goes away while the provider acts on it.
			cutOnPost.Cut()
			posts++
		}
		mu.Unlock()
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { fake.Release(); srv.Close() })
	env := with(direct.env(), "STRIPE_API_KEY", fake.APIKey())
	r := runBinary(t, env, "migrate")
	require.Equal(t, 0, r.code, "%s", r)
	charge := func(env map[string]string, order string, extra ...string) result {
		return runBinary(t, env, append([]string{"charge", "--base-url", srv.URL, "--order", order, "--amount", "500", "--currency", "USD",
			"--payment-method", "pm_card_visa"}, extra...)...)
	}

	t.Run("before the call", func(t *testing.T) {
		tg, p := proxied(t, direct)
		p.Cut()
		r := charge(with(env, "PAYONCE_LEDGER", tg.ledger), "order-gone-before", "--json")
		require.Equal(t, 8, r.code, "%s", r)
		require.Contains(t, r.stderr, "ledger")
		require.Contains(t, r.stderr, "unavailable")
		require.Contains(t, r.stderr, "nothing was sent")
		require.Empty(t, r.stdout)

		stats := runBinary(t, with(env, "PAYONCE_LEDGER", tg.ledger), "stats")
		require.Equal(t, 8, stats.code, "%s", stats)
	})

	t.Run("after the request was sent", func(t *testing.T) {
		tg, p := proxied(t, direct)
		mu.Lock()
		cutOnPost = p
		mu.Unlock()
		order := "order-gone-during"
		r := charge(with(env, "PAYONCE_LEDGER", tg.ledger), order, "--timeout", "1s")
		mu.Lock()
		sent := posts
		cutOnPost = nil
		mu.Unlock()
		require.Equal(t, 1, sent, "the charge reached the provider")
		require.Equal(t, 4, r.code, "the charge may have moved money: unknown, not unavailable\n%s", r)
		require.Contains(t, r.stderr, "outcome unknown", "%s", r)
		require.Contains(t, r.stderr, "payonce reconcile", "%s", r)
		require.NotContains(t, r.stderr, "ledger is unavailable, nothing was sent", "%s", r)

		// With the ledger back, reconciliation finds the charge the
		// provider made, and the same command replays it.
		rec := runBinary(t, env, "reconcile", "--until-settled", "--timeout", "2m", "--base-url", srv.URL)
		require.Equal(t, 0, rec.code, "%s", rec)
		again := charge(env, order, "--json")
		res := wantJSON(t, again, 0)
		require.Equal(t, "succeeded", res["status"])
		require.Equal(t, opID(t, payonce.KindCharge, order), res["operation_id"])
	})
}

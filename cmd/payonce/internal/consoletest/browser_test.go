package consoletest

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/cmd/payonce/internal/cli"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
	"github.com/payonce/payonce/providers/stripe"
)

// chromiumPath is Debian's chromium; PAYONCE_CHROMIUM names another.
func chromiumPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("PAYONCE_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
		if lp, err := exec.LookPath("chromium"); err == nil {
			p = lp
		}
	}
	if _, err := os.Stat(p); err != nil {
		msg := "no Chromium at " + p + ": the browser tests need it (apt-get install chromium, or PAYONCE_CHROMIUM=/path/to/chrome)"
		if os.Getenv("PAYONCE_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg + "; PAYONCE_REQUIRE_BROWSER=1 makes them required")
		}
		t.Skip(msg)
	}
	return p
}

// screenshotDir is PAYONCE_SCREENSHOTS, or a temporary directory.
func screenshotDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("PAYONCE_SCREENSHOTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}

// world is a console over a ledger with charges in manual review, and the
// fake Stripe and the client behind it, on a manual clock.
type world struct {
	url    string
	store  ledger.Store
	fake   interface{ ClearScripts() }
	script func(m mocks.Match, f ...mocks.FaultKind)
	ids    map[string]string // order id -> operation id
}

// newWorld charges each order against a fake Stripe that stores a 500
// under its key, then moves the clock past the key window: each charge is
// in review (stored_error or window_passed), without the test sleeping.
func newWorld(t *testing.T, users string, orders ...string) *world {
	t.Helper()
	ctx := context.Background()
	store, err := ledgersqlite.Open(filepath.Join(t.TempDir(), "ledger.db"), ledgersqlite.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	require.NoError(t, store.Migrate(ctx))
	clock := mocks.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	fake := mocks.NewStripe(mocks.StripeOptions{Options: mocks.Options{Clock: clock.Now}})
	t.Cleanup(fake.Close)
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL(), Now: clock.Now})
	require.NoError(t, err)
	client, err := payonce.New(providertest.ClientConfig(psp, store, clock.Now))
	require.NoError(t, err)
	w := &world{store: store, fake: fake, script: fake.Script, ids: map[string]string{}}
	charge := func(o string) error {
		_, err := client.Charge(ctx, payonce.ChargeParams{OrderID: o, Amount: 900, Currency: "USD", PaymentMethod: "pm_card_visa"})
		return err
	}
	for _, o := range orders {
		id, err := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{o}}.Key()
		require.NoError(t, err)
		w.ids[o] = id
		fake.Script(mocks.Match{Path: "/v1/payment_intents", IdempotencyKey: id}, mocks.FaultStored500)
		require.ErrorIs(t, charge(o), payonce.ErrOutcomeUnknown)
	}
	clock.Advance(25 * time.Hour)
	for _, o := range orders {
		require.ErrorIs(t, charge(o), payonce.ErrManualReview)
		op, _, err := store.Get(ctx, w.ids[o])
		require.NoError(t, err)
		require.Equal(t, ledger.StatusManualReview, op.Status)
	}
	h, err := cli.ConsoleHandler(cli.ConsoleOptions{Store: store, Clients: []*payonce.Client{client}, Users: users, Now: clock.Now})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	w.url = srv.URL
	return w
}

func userEntry(t *testing.T, name, role, pw string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	require.NoError(t, err)
	return name + ":" + role + ":" + string(h)
}

// browser is one headless Chromium; each tab has its own cookies.
type browser struct {
	t     *testing.T
	alloc context.Context
	shots string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	if os.Geteuid() == 0 {
		// Chromium's sandbox refuses to run as root (CI containers).
		opts = append(opts, chromedp.NoSandbox)
	}
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	return &browser{t: t, alloc: alloc, shots: screenshotDir(t)}
}

// tab is one browser context (its own cookie jar) logged in as nobody yet.
type tab struct {
	b   *browser
	ctx context.Context
	url string
}

func (b *browser) tab(base string) *tab {
	// A new browser context per tab: separate cookies, so two operators
	// can be logged in at once.
	ctx, cancel := chromedp.NewContext(b.alloc)
	b.t.Cleanup(cancel)
	// The first Run starts the browser; it must not carry a timeout.
	require.NoError(b.t, chromedp.Do(ctx))
	return &tab{b: b, ctx: ctx, url: base}
}

// do runs steps with a bound, failing the test with what it was doing.
func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.b.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	require.NoError(tb.b.t, chromedp.Do(ctx, steps...), "%s", what)
}

func run[T any](tb *tab, what string, a chromedp.Action[T]) T {
	tb.b.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	require.NoError(tb.b.t, err, "%s", what)
	return v
}

// shot saves a PNG of the whole page as name.png.
func (tb *tab) shot(name string) {
	tb.b.t.Helper()
	png := run(tb, "screenshot "+name, chromedp.FullScreenshot(100))
	require.NoError(tb.b.t, os.WriteFile(filepath.Join(tb.b.shots, name+".png"), png, 0o644))
}

func (tb *tab) present(sel string) bool {
	tb.b.t.Helper()
	return run(tb, "query "+sel, chromedp.Evaluate[bool](`document.querySelector(`+jsString(sel)+`) !== null`))
}

func (tb *tab) text(sel string) string {
	tb.b.t.Helper()
	return run(tb, "text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

func (tb *tab) path() string {
	tb.b.t.Helper()
	loc := run(tb, "location", chromedp.Location())
	return strings.TrimPrefix(loc, tb.url)
}

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func (tb *tab) login(user, pw string) {
	tb.b.t.Helper()
	tb.do("log in as "+user,
		chromedp.Navigate(tb.url+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`button#login`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="user"]`), user),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), pw),
		chromedp.Click(chromedp.CSS(`button#login`)),
		chromedp.WaitVisible(chromedp.CSS(`#whoami`)),
	)
}

// The main flows of an operator, in a real browser: log in, find an
// operation in review by its order id, read its timeline, resolve it as
// failed and see it leave the queue with its resolution in the timeline; a
// resend without evidence is refused with the reason; a viewer sees no
// resolve form.
func TestConsoleInBrowser(t *testing.T) {
	b := newBrowser(t)
	users := userEntry(t, "alice@example.com", "resolver", "alice's pw") + "," + userEntry(t, "victor", "viewer", "victor's pw")
	w := newWorld(t, users, "order-1001", "order-1002", "order-1003")
	alice := b.tab(w.url)

	// Unauthenticated: the login page, and a wrong password gets the
	// generic answer.
	alice.do("open the console", chromedp.Navigate(w.url+"/"), chromedp.WaitVisible(chromedp.CSS(`button#login`)))
	require.Equal(t, "/login", alice.path())
	alice.shot("login")
	alice.do("a wrong password",
		chromedp.SendKeys(chromedp.CSS(`input[name="user"]`), "alice@example.com"),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "guess"),
		chromedp.Click(chromedp.CSS(`button#login`)),
		chromedp.WaitVisible(chromedp.CSS(`#flash.error`)),
	)
	require.Equal(t, "wrong user or password", alice.text(`#flash`))

	alice.login("alice@example.com", "alice's pw")
	require.Equal(t, "/", alice.path())
	require.Contains(t, alice.text(`#whoami`), "alice@example.com")
	require.Contains(t, alice.text(`#whoami`), "resolver")
	alice.do("overview", chromedp.WaitVisible(chromedp.CSS(`#stats`)), chromedp.WaitVisible(chromedp.CSS(`#reviews`)))
	alice.shot("overview")

	// The review queue lists the three, oldest first.
	target := w.ids["order-1001"]
	alice.do("review queue", chromedp.Click(chromedp.CSS(`a#nav-review`)), chromedp.WaitVisible(chromedp.CSS(`table#review-queue`)))
	for _, id := range w.ids {
		require.True(t, alice.present(`table#review-queue tr[data-op="`+id+`"]`), "%s in the queue", id)
	}
	alice.shot("review")

	// Search by order id: one hit opens the operation.
	alice.do("search by order id",
		chromedp.SendKeys(chromedp.CSS(`form#search input[name="q"]`), "order-1001"),
		chromedp.Submit(chromedp.CSS(`form#search input[name="q"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#op-id`)),
	)
	require.Equal(t, "/ops/"+target, alice.path())
	require.Contains(t, alice.text(`#op-id`), target)
	require.Contains(t, alice.text(`#op-status`), "manual_review")
	op, _, err := w.store.Get(context.Background(), target)
	require.NoError(t, err)
	require.NotEmpty(t, op.ReviewCode)
	require.Contains(t, alice.text(`#op-review-code`), string(op.ReviewCode))
	// Its timeline: the attempt that got the stored 500, and no
	// resolution yet.
	require.True(t, alice.present(`ol#timeline li[data-kind="attempt"]`))
	require.False(t, alice.present(`ol#timeline li[data-kind="resolution"]`))
	alice.shot("operation")

	// Resolve as failed: the operation leaves review with its audit entry.
	alice.do("resolve as failed",
		chromedp.SetValue(chromedp.CSS(`form#resolve select[name="outcome"]`), "failed"),
		chromedp.SendKeys(chromedp.CSS(`form#resolve textarea[name="note"]`), "nothing at Stripe under any key"),
		chromedp.Click(chromedp.CSS(`button#resolve-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`#flash`)),
	)
	require.True(t, alice.present(`#flash.ok`), "flash: %s", alice.text(`#flash`))
	require.Equal(t, "/ops/"+target, alice.path())
	require.Contains(t, alice.text(`#op-status`), "failed")
	require.True(t, alice.present(`ol#timeline li[data-kind="resolution"]`))
	audit := alice.text(`ol#timeline li[data-kind="resolution"]`)
	require.Contains(t, audit, "alice@example.com", "the actor is the logged-in operator")
	require.Contains(t, audit, "nothing at Stripe under any key")
	alice.shot("operation-resolved")
	op, _, err = w.store.Get(context.Background(), target)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusFailed, op.Status)

	alice.do("review queue again", chromedp.Click(chromedp.CSS(`a#nav-review`)), chromedp.WaitVisible(chromedp.CSS(`table#review-queue`)))
	require.False(t, alice.present(`tr[data-op="`+target+`"]`), "the resolved operation left the queue")
	require.True(t, alice.present(`tr[data-op="`+w.ids["order-1002"]+`"]`))

	// A resend while Stripe cannot be asked: refused, the reason shown,
	// nothing recorded.
	faults := make([]mocks.FaultKind, 200)
	for i := range faults {
		faults[i] = mocks.FaultGatewayBefore502
	}
	w.script(mocks.Match{Method: "GET"}, faults...)
	other := w.ids["order-1002"]
	alice.do("resend without evidence",
		chromedp.Navigate(w.url+"/ops/"+other),
		chromedp.WaitVisible(chromedp.CSS(`form#resolve`)),
		chromedp.SetValue(chromedp.CSS(`form#resolve select[name="outcome"]`), "resend"),
		chromedp.SendKeys(chromedp.CSS(`form#resolve textarea[name="note"]`), "try again"),
		chromedp.Click(chromedp.CSS(`button#resolve-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`#flash`)),
	)
	w.fake.ClearScripts()
	require.True(t, alice.present(`#flash.error`), "flash: %s", alice.text(`#flash`))
	require.Contains(t, alice.text(`#flash`), "resend refused")
	require.Contains(t, alice.text(`#op-status`), "manual_review")
	alice.shot("resend-refused")
	op, _, err = w.store.Get(context.Background(), other)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusManualReview, op.Status)
	require.Nil(t, op.Resolution)

	// A viewer reads the same operation, without a form to resolve it.
	victor := b.tab(w.url)
	victor.login("victor", "victor's pw")
	require.Contains(t, victor.text(`#whoami`), "viewer")
	victor.do("viewer opens an operation", chromedp.Navigate(w.url+"/ops/"+other), chromedp.WaitVisible(chromedp.CSS(`#op-id`)))
	require.False(t, victor.present(`form#resolve`), "a viewer sees no resolve form")
	require.False(t, victor.present(`button#resolve-submit`))
	victor.do("viewer's queue", chromedp.Navigate(w.url+"/review"), chromedp.WaitVisible(chromedp.CSS(`table#review-queue`)))
	require.False(t, victor.present(`form#bulk`), "a viewer sees no bulk form")
	victor.shot("review-viewer")

	// Logging out ends the session: the console sends the browser back to
	// the login page.
	alice.do("log out",
		chromedp.Navigate(w.url+"/logout"),
		chromedp.WaitVisible(chromedp.CSS(`button#logout-submit`)),
		chromedp.Click(chromedp.CSS(`button#logout-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`button#login`)),
		chromedp.Navigate(w.url+"/review"),
		chromedp.WaitVisible(chromedp.CSS(`button#login`)),
	)
	require.Equal(t, "/login", alice.path())
}

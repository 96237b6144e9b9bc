package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

const (
	nOrders     = 150 // distinct orders
	concurrency = 8   // requests in flight at once
	killAfter   = 60  // answers before the SIGKILL
	faultRate   = "0.3"
)

// TestServiceSurvivesKillAgainstFaultyFake runs the service as a real
// process against "payonce fake" (Stripe, 30 % of money-moving requests
// failed: answers lost after the charge, hangs, 502s, 429s, stored 500s;
// signed webhooks), fires orders at it (some twice at once), SIGKILLs it
// mid-load, restarts it, sends every order again as a client retrying would,
// lets background work settle, and checks against the fake's own record of
// what it charged: no order charged twice, no charge for an order the
// service does not know, no acknowledged order lost, and every order
// either settled (its order row agreeing, settled once by the feed
// consumer) or visibly still processing with nothing charged twice.
func TestServiceSurvivesKillAgainstFaultyFake(t *testing.T) {
	start := time.Now()
	h := newHarness(t, harnessOptions{faultRate: faultRate, webhooks: true, poolSize: 12, timeout: 3 * time.Minute})
	ctx, pool, schema, base, httpc := h.ctx, h.pool, h.schema, h.base, h.httpc
	svc := h.startService(t, "service#1")

	orders := make([]orderRequest, nOrders)
	for i := range orders {
		pm := "pm_card_visa"
		if i%10 == 9 {
			pm = "pm_card_chargeDeclined"
		}
		orders[i] = orderRequest{ID: fmt.Sprintf("order-%03d", i), Amount: int64(1000 + i), Currency: "USD", PaymentMethod: pm}
	}
	codes := map[int]int{} // HTTP status -> answers
	var mu sync.Mutex
	// fire sends each order in jobs once (every third twice at once) and
	// returns the orders that got an answer; onAnswer runs after each.
	fire := func(jobs []int, onAnswer func(answered int)) map[int]bool {
		queue := make(chan int)
		answered := map[int]bool{}
		var n atomic.Int64
		var wg sync.WaitGroup
		for range concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range queue {
					code, body, err := post(httpc, base+"/orders", orders[i])
					if err != nil {
						continue // cut by the kill: a client would retry later
					}
					mu.Lock()
					codes[code]++
					answered[i] = true
					mu.Unlock()
					if code != http.StatusOK && code != http.StatusAccepted && code != http.StatusPaymentRequired {
						t.Errorf("order %s: %d %s", orders[i].ID, code, body)
					}
					onAnswer(int(n.Add(1)))
				}
			}()
		}
		for _, i := range jobs {
			queue <- i
			if i%3 == 0 {
				queue <- i // the same order again, concurrently
			}
		}
		close(queue)
		wg.Wait()
		return answered
	}
	all := make([]int, nOrders)
	for i := range all {
		all[i] = i
	}

	// 1. Load, and a SIGKILL in the middle of it.
	var killOnce sync.Once
	acked := fire(all, func(n int) {
		if n == killAfter {
			killOnce.Do(func() { svc.kill(t) })
		}
	})
	killOnce.Do(func() { t.Fatalf("only %d orders answered: no kill", len(acked)) })
	kills := 1
	svc = h.startService(t, "service#2")

	// 2. Nothing acknowledged before the kill is lost.
	for i := range acked {
		if v, code := getOrder(t, httpc, base, orders[i].ID); code != http.StatusOK {
			t.Errorf("order %s was answered before the kill and is gone: %d %+v", orders[i].ID, code, v)
		}
	}
	// Nor did any order commit without its charge, answered or cut by the
	// kill: the Reconciler charges what committed, nobody else would.
	committed, err := pool.Query(ctx, "SELECT id FROM "+pgx.Identifier{schema, "orders"}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(committed, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if v, code := getOrder(t, httpc, base, id); code != http.StatusOK || v.Payment.Status == "" {
			t.Errorf("order %s committed without its charge: %d %+v", id, code, v)
		}
	}
	// 3. Every order again, as clients retrying after errors and timeouts do.
	fire(all, func(int) {})

	// 4. Let background work settle: every order settled with its order row
	// agreeing, or unknown with nothing charged (a stored 500 replays until
	// the key window passes, 24 h).
	var views map[string]orderView
	var truth mocks.Truth
	deadline := time.Now().Add(40 * time.Second)
	for {
		// The service's answers first, the fake's truth after them: a
		// charge the Reconciler makes between the two reads is then in
		// the truth the answers are checked against (read the other way
		// round, an order charged in between looks succeeded with no
		// charge).
		views = map[string]orderView{}
		codes := map[string]int{}
		for _, o := range orders {
			views[o.ID], codes[o.ID] = getOrder(t, httpc, base, o.ID)
		}
		truth = getTruth(t, h.truthURL)
		charged := truth.ChargesBy(stripe.MetaOperation)
		var waiting []string
		for _, o := range orders {
			v, code := views[o.ID], codes[o.ID]
			settledRow := map[string]string{"succeeded": "paid", "failed": "failed", "manual_review": "review"}[v.Payment.Status]
			if code != http.StatusOK || !(settledRow != "" && v.State == settledRow ||
				v.Payment.Status == "unknown" && charged[v.Payment.OperationID] == 0) {
				waiting = append(waiting, fmt.Sprintf("%s %d %s/%s", o.ID, code, v.Payment.Status, v.State))
			}
		}
		if len(waiting) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d orders did not settle: %v\nservice log tail:\n%s", len(waiting), waiting, svc.tail())
		}
		time.Sleep(time.Second)
	}

	// 5. The fake's truth against the service's answers.
	opOrder := map[string]string{}
	statuses := map[string]int{}
	for id, v := range views {
		opOrder[v.Payment.OperationID] = id
		statuses[v.Payment.Status]++
	}
	charged := truth.ChargesBy(stripe.MetaOperation)
	authorized := 0
	for op, n := range charged {
		authorized += n
		if n > 1 {
			t.Errorf("order %s (operation %s) charged %d times", opOrder[op], op, n)
		}
		if opOrder[op] == "" {
			t.Errorf("operation %s charged at the provider belongs to no order", op)
		}
	}
	for _, p := range truth.Payments {
		if !p.Authorized {
			continue
		}
		id := opOrder[p.Metadata[stripe.MetaOperation]]
		v := views[id]
		if (v.Payment.Status == "succeeded" && v.Payment.ProviderRef != p.ID) || p.Amount != v.Amount {
			t.Errorf("order %s: the provider charged %s for %d, the service says %s for %d", id, p.ID, p.Amount, v.Payment.ProviderRef, v.Amount)
		}
	}
	for id, v := range views {
		op := v.Payment.OperationID
		switch v.Payment.Status {
		case "succeeded":
			if charged[op] != 1 {
				t.Errorf("order %s succeeded with %d charges at the provider", id, charged[op])
			}
		case "failed":
			if charged[op] != 0 {
				t.Errorf("order %s failed with %d charges at the provider", id, charged[op])
			}
		}
	}
	// The feed consumer settled each order once, across the kill.
	rows, err := pool.Query(ctx, "SELECT id, state, settled FROM "+pgx.Identifier{schema, "orders"}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	nRows := 0
	for rows.Next() {
		var id, state string
		var settled int
		if err := rows.Scan(&id, &state, &settled); err != nil {
			t.Fatal(err)
		}
		nRows++
		want := 0
		if state == "paid" || state == "failed" {
			want = 1
		}
		if settled != want {
			t.Errorf("order %s (%s) settled %d times by the feed consumer, want %d", id, state, settled, want)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if nRows != nOrders {
		t.Errorf("%d order rows, want %d", nRows, nOrders)
	}

	// 6. Graceful shutdown on SIGTERM: exit 0.
	if err := svc.stop(syscall.SIGTERM, 20*time.Second); err != nil {
		t.Errorf("service on SIGTERM: %v\n%s", err, svc.tail())
	}
	hooks, _ := getJSON(h.fakeURL + "/__webhooks")
	t.Logf("orders %d, answers %v, SIGKILLs %d; at the fake: %d payments, %d authorized, faults %v, webhooks %s; "+
		"final charge statuses %v; %.1fs",
		nOrders, codes, kills, len(truth.Payments), authorized, truth.Faults, bytes.TrimSpace(hooks), statuses, time.Since(start).Seconds())
	h.fake.closeStdin()
	if err := h.fake.stop(syscall.SIGTERM, 20*time.Second); err != nil {
		t.Errorf("fake: %v", err)
	}
}

// harness is the service's world: the payonce and httpservice binaries,
// "payonce fake" as its own process, a fresh schema (dropped at the end,
// kept with HTTPSERVICE_KEEP_SCHEMA=1 when the test fails), and the
// service's environment.
type harness struct {
	ctx     context.Context
	pool    *pgxpool.Pool // the test's own, search_path the schema
	schema  string
	app     string // the service's application_name, to find its backends in pg_stat_activity
	base    string // the service's URL (one address across restarts)
	httpc   *http.Client
	fake    *proc
	fakeURL string
	// truthURL answers the fake's own record (mocks.Truth).
	truthURL   string
	serviceBin string
	env        []string
}

type harnessOptions struct {
	faultRate string        // the fake's --fault-rate
	webhooks  bool          // the fake delivers signed webhooks to the service
	poolSize  int           // the service's pool_max_conns
	timeout   time.Duration // the whole test's
}

func newHarness(t *testing.T, o harnessOptions) *harness {
	dbURL := databaseURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	t.Cleanup(cancel)
	h := &harness{ctx: ctx, httpc: &http.Client{Timeout: 20 * time.Second}}

	bin := t.TempDir()
	payonceBin := filepath.Join(bin, "payonce")
	h.serviceBin = filepath.Join(bin, "httpservice")
	goBuild(t, filepath.Join("..", ".."), payonceBin, "./cmd/payonce")
	goBuild(t, ".", h.serviceBin, ".")

	// A fresh schema per run holds both the service's tables and the ledger.
	h.schema = "httpservice_" + strings.ToLower(rand.Text())
	h.app = h.schema
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = h.schema
	h.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.pool.Close) // after the drop below: cleanups run last first
	t.Cleanup(func() {
		if os.Getenv("HTTPSERVICE_KEEP_SCHEMA") == "1" && t.Failed() {
			return
		}
		dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer dcancel()
		if _, err := h.pool.Exec(dctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{h.schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", h.schema, err)
		}
	})

	// The service keeps one address across restarts, so that the fake's
	// webhooks find the new process.
	addr := freeAddr(t)
	h.base = "http://" + addr
	args := []string{"fake", "--provider", "stripe", "--fault-rate", o.faultRate, "--seed", "25", "--hang-for", "3s", "--exit-on-stdin-eof"}
	secret := ""
	if o.webhooks {
		secret = "whsec_" + rand.Text()
		args = append(args, "--webhook-url", h.base+"/webhooks/stripe", "--webhook-secret", secret)
	}
	h.fake = startProc(t, "fake", exec.CommandContext(ctx, payonceBin, args...))
	var ready struct {
		URL      string            `json:"url"`
		TruthURL string            `json:"truth_url"`
		Env      map[string]string `json:"env"`
	}
	if err := json.Unmarshal([]byte(h.fake.waitLine(t, "{", 30*time.Second)), &ready); err != nil {
		t.Fatalf("the fake's ready line: %v", err)
	}
	h.fakeURL, h.truthURL = ready.URL, ready.TruthURL
	h.env = append(os.Environ(),
		"DATABASE_URL="+withParam(withParam(dbURL, "pool_max_conns", fmt.Sprint(o.poolSize)), "application_name", h.app),
		"DATABASE_SCHEMA="+h.schema, "ADDR="+addr,
		"STRIPE_API_KEY="+ready.Env["STRIPE_API_KEY"], "STRIPE_BASE_URL="+ready.URL, "STRIPE_WEBHOOK_SECRET="+secret,
		// The fake's search is never behind, and the test cannot wait
		// out production's 30 s first check and 10 s idle passes.
		"STRIPE_SEARCH_LAG=200ms", "PAYONCE_CHECK_INTERVAL=500ms", "PAYONCE_RECONCILE_INTERVAL=300ms", "FEED_POLL_INTERVAL=200ms")
	return h
}

// startService starts the service and waits until it listens.
func (h *harness) startService(t *testing.T, name string) *proc {
	cmd := exec.CommandContext(h.ctx, h.serviceBin)
	cmd.Env = h.env
	p := startProc(t, name, cmd)
	p.waitLine(t, "msg=listening", 30*time.Second)
	return p
}

// databaseURL returns PAYONCE_TEST_DATABASE_URL, or skips (fails with
// PAYONCE_REQUIRE_POSTGRES=1) saying how to run the test.
func databaseURL(t *testing.T) string {
	if u := os.Getenv("PAYONCE_TEST_DATABASE_URL"); u != "" {
		return u
	}
	msg := "needs PostgreSQL: run PAYONCE_TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' go test ./examples/httpservice/"
	if os.Getenv("PAYONCE_REQUIRE_POSTGRES") == "1" {
		t.Fatal(msg + " (PAYONCE_REQUIRE_POSTGRES=1 makes a missing database a failure)")
	}
	t.Skip(msg)
	return ""
}

// withParam sets a pgx or libpq parameter (pool_max_conns,
// application_name) on a URL or keyword/value DSN.
func withParam(dsn, key, value string) string {
	switch {
	case !strings.Contains(dsn, "://"):
		return fmt.Sprintf("%s %s=%s", dsn, key, value)
	case strings.Contains(dsn, "?"):
		return fmt.Sprintf("%s&%s=%s", dsn, key, value)
	}
	return fmt.Sprintf("%s?%s=%s", dsn, key, value)
}

func goBuild(t *testing.T, dir, out, pkg string) {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s in %s: %v\n%s", pkg, dir, err, b)
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func post(c *http.Client, url string, v any) (int, string, error) {
	b, _ := json.Marshal(v)
	resp, err := c.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func getOrder(t *testing.T, c *http.Client, base, id string) (orderView, int) {
	var v orderView
	resp, err := c.Get(base + "/orders/" + id)
	if err != nil {
		t.Fatalf("GET order %s: %v", id, err)
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&v)
	return v, resp.StatusCode
}

func getJSON(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func getTruth(t *testing.T, url string) mocks.Truth {
	b, err := getJSON(url)
	var truth mocks.Truth
	if err == nil {
		err = json.Unmarshal(b, &truth)
	}
	if err != nil {
		t.Fatalf("the fake's truth: %v", err)
	}
	return truth
}

// proc is a child process whose stdout and stderr lines are kept.
type proc struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	mu    sync.Mutex
	lines []string
	seen  chan struct{} // signalled on every new line
}

func startProc(t *testing.T, name string, cmd *exec.Cmd) *proc {
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), seen: make(chan struct{}, 1)}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			select {
			case p.seen <- struct{}{}:
			default:
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		_ = cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	t.Cleanup(func() { _ = p.stop(syscall.SIGKILL, 10*time.Second) })
	return p
}

// waitLine returns the first line that starts with (or, for a log line,
// contains) marker.
func (p *proc) waitLine(t *testing.T, marker string, timeout time.Duration) string {
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		for _, l := range p.lines {
			if strings.HasPrefix(l, marker) || strings.Contains(l, " "+marker) {
				p.mu.Unlock()
				return l
			}
		}
		p.mu.Unlock()
		select {
		case <-p.seen:
		case <-p.done:
			t.Fatalf("%s exited before %q:\n%s", p.name, marker, p.tail())
		case <-deadline:
			t.Fatalf("%s printed no %q in %v:\n%s", p.name, marker, timeout, p.tail())
		}
	}
}

func (p *proc) kill(t *testing.T) {
	if err := p.stop(syscall.SIGKILL, 10*time.Second); err != nil {
		t.Errorf("killing %s: %v", p.name, err)
	}
}

func (p *proc) closeStdin() { _ = p.stdin.Close() }

// stop sends sig and waits for the exit; a SIGKILL's exit is expected, any
// other signal's must be 0.
func (p *proc) stop(sig syscall.Signal, timeout time.Duration) error {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(sig)
		select {
		case <-p.done:
		case <-time.After(timeout):
			_ = p.cmd.Process.Kill()
			<-p.done
			return fmt.Errorf("%s did not exit within %v of %v", p.name, timeout, sig)
		}
	}
	if sig != syscall.SIGKILL && !p.cmd.ProcessState.Success() {
		return fmt.Errorf("%s exited with %v", p.name, p.cmd.ProcessState)
	}
	return nil
}

// tail is the end of the process's output, for failure messages.
func (p *proc) tail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lines
	if len(l) > 40 {
		l = l[len(l)-40:]
	}
	return strings.Join(l, "\n")
}

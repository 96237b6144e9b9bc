package cli_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
)

const testWebhookSecret = "whsec_test_cli"

// stripeEvent is a payment_intent.succeeded event for operation opID,
// signed at t with the test secret.
func stripeEvent(eventID, opID string, t time.Time) (body, signature string) {
	body = fmt.Sprintf(`{"id":%q,"object":"event","type":"payment_intent.succeeded","created":%d,"livemode":false,`+
		`"data":{"object":{"id":"pi_cli_lost","object":"payment_intent","status":"succeeded","amount":700,"currency":"usd",`+
		`"capture_method":"automatic","metadata":{"payonce_op":%q,"payonce_kind":"charge"}}}}`, eventID, t.Unix(), opID)
	mac := hmac.New(sha256.New, []byte(testWebhookSecret))
	fmt.Fprintf(mac, "%d.%s", t.Unix(), body)
	return body, fmt.Sprintf("t=%d,v1=%s", t.Unix(), hex.EncodeToString(mac.Sum(nil)))
}

// serveWebhooks starts "payonce webhooks serve" on a free port and returns
// its base URL and a stop function that sends SIGTERM and returns what it
// printed after it.
func serveWebhooks(t *testing.T, env map[string]string, args ...string) (string, func() string) {
	t.Helper()
	first, stop := serveWebhooksLine(t, env, args...)
	m := regexp.MustCompile(`on (http://\S+)`).FindStringSubmatch(first)
	require.NotNil(t, m, "first line: %s", first)
	return m[1], stop
}

// serveWebhooksLine is serveWebhooks returning the server's first line.
func serveWebhooksLine(t *testing.T, env map[string]string, args ...string) (string, func() string) {
	t.Helper()
	b := startBinary(t, env, append([]string{"webhooks", "serve", "--addr", "127.0.0.1:0"}, args...)...)
	return b.first, func() string { return b.stop(t, syscall.SIGTERM) }
}

func postWebhook(t *testing.T, url, body, signature string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Stripe-Signature", signature)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestWebhooksServeSettlesLostAnswer: a charge whose answer was lost and
// whose lookups fail is settled by Stripe's signed event alone, through
// "payonce webhooks serve", with the audit trail naming the event; a
// forged event and a replay change nothing.
func TestWebhooksServeSettlesLostAnswer(t *testing.T) {
	t.Parallel()
	eachLedger(t, func(t *testing.T, tg target) {
		fake, env := fakeStripe(t, tg, mocks.StripeOptions{})
		env = with(env, "STRIPE_WEBHOOK_SECRET", testWebhookSecret)
		order := "order-hooked"
		id := opID(t, payonce.KindCharge, order)
		fake.Script(mocks.Match{Path: "/v1/payment_intents", IdempotencyKey: id}, mocks.FaultGatewayAfter502)
		faults := make([]mocks.FaultKind, 500)
		for i := range faults {
			faults[i] = mocks.FaultGatewayBefore502
		}
		fake.Script(mocks.Match{Method: "GET"}, faults...)
		r := runBinary(t, env, "charge", "--order", order, "--amount", "700", "--currency", "USD",
			"--payment-method", "pm_card_visa", "--base-url", fake.URL(), "--timeout", "1s", "--json")
		require.Equal(t, 4, r.code, "the answer is lost and lookups fail: unknown\n%s", r)

		base, stop := serveWebhooks(t, env, "--base-url", fake.URL())
		resp, err := http.Get(base + "/healthz")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)

		url := base + "/webhooks/stripe"
		body, sig := stripeEvent("evt_cli_1", id, time.Now())
		forged := strings.Replace(body, `"status":"succeeded"`, `"status":"canceled"`, 1)
		require.Equal(t, http.StatusBadRequest, postWebhook(t, url, forged, sig), "a body that does not match its signature")
		require.Equal(t, http.StatusOK, postWebhook(t, url, body, sig))
		require.Equal(t, http.StatusOK, postWebhook(t, url, body, sig), "a redelivery is acknowledged")
		out := stop()
		require.Contains(t, out, "webhook server stopped")

		show := runBinary(t, env, "ops", "show", id, "--json")
		require.Equal(t, 0, show.code, "%s", show)
		require.Contains(t, show.stdout, `"status":"succeeded"`)
		require.Contains(t, show.stdout, "evt_cli_1", "the audit trail names the event")
		require.Equal(t, 1, strings.Count(show.stdout, `"kind":"webhook"`), "applied once")

		list := runBinary(t, env, "webhooks", "list", "--json")
		require.Equal(t, 0, list.code, "%s", list)
		require.Len(t, list.jsonLines(t), 1)
		require.Contains(t, list.stdout, `"disposition":"settled"`)
	})
}

// TestWebhooksServeUsage: the server refuses what it cannot serve, saying
// what to set.
func TestWebhooksServeUsage(t *testing.T) {
	t.Parallel()
	tg := sqliteTarget(t)
	fake, env := fakeStripe(t, tg, mocks.StripeOptions{})
	_ = fake
	requireUsageErrors(t, []usageCase{
		{name: "no webhook settings", env: env, args: []string{"webhooks", "serve", "--addr", "127.0.0.1:0"},
			want: []string{"STRIPE_WEBHOOK_SECRET", "ADYEN_HMAC_KEY", "YOOKASSA_WEBHOOK_ALLOW"}},
		{name: "provider flag", env: with(env, "STRIPE_WEBHOOK_SECRET", testWebhookSecret),
			args: []string{"webhooks", "serve", "--provider", "stripe"}, want: []string{"--provider does not apply"}},
		{name: "bad addr", env: with(env, "STRIPE_WEBHOOK_SECRET", testWebhookSecret),
			args: []string{"webhooks", "serve", "--addr", "nowhere"}, want: []string{"--addr"}},
		{name: "bad allowlist", env: with(env, "YOOKASSA_SHOP_ID", "1", "YOOKASSA_SECRET_KEY", "k", "YOOKASSA_WEBHOOK_ALLOW", "10.0.0.0/8,bogus"),
			args: []string{"webhooks", "serve", "--addr", "127.0.0.1:0"}, want: []string{"YOOKASSA_WEBHOOK_ALLOW", "bogus"}},
		{name: "bad disposition", env: env, args: []string{"webhooks", "list", "--disposition", "maybe"},
			want: []string{"--disposition", "contradiction"}},
	}, func(t *testing.T, c usageCase) result { return runMain(t, c.env, c.args...) })
}

// TestWebhooksListUnreadable: events that verified but could not be read
// are listed with their reason (table and JSON), found by --disposition
// unreadable, and counted on stderr for the operator.
func TestWebhooksListUnreadable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	store, err := ledgersqlite.Open(path, ledgersqlite.Config{})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	reason := `item 1 (pspReference "QFQTPCQ8HXSKGK82", eventCode AUTHORISATION): amount.value "12.5" is not an integer`
	for i, e := range []ledger.WebhookEvent{
		{Provider: "adyen", ID: "unreadable:9c1e", Type: "AUTHORISATION", Unreadable: reason},
		{Provider: "adyen", ID: "QFQTPCQ8HXSKGK83:CAPTURE:true", Type: "CAPTURE"},
	} {
		_, err := store.RecordWebhook(ctx, ledger.RecordWebhookParams{Event: e, Now: now.Add(time.Duration(i) * time.Minute)})
		require.NoError(t, err)
	}
	require.NoError(t, store.Close())
	env := map[string]string{"PAYONCE_LEDGER": "sqlite:" + path}

	table := runMain(t, env, "webhooks", "list")
	require.Equal(t, 0, table.code, "%s", table)
	require.Contains(t, table.stdout, "unreadable:9c1e")
	require.Regexp(t, `unreadable:9c1e\s+AUTHORISATION\s+-\s+unreadable\s+item 1 \(pspReference "QFQTPCQ8HXSKGK82"`, table.stdout)
	require.Contains(t, table.stderr, "1 event(s) verified but could not be read")

	only := runMain(t, env, "webhooks", "list", "--disposition", "unreadable", "--json")
	require.Equal(t, 0, only.code, "%s", only)
	lines := only.jsonLines(t)
	require.Len(t, lines, 1)
	require.Equal(t, reason, lines[0]["unreadable"])
	require.Equal(t, "unreadable:9c1e", lines[0]["id"])
	require.Contains(t, only.stdout, `"disposition":"unreadable"`)

	all := runMain(t, env, "webhooks", "list", "--json")
	require.Equal(t, 0, all.code, "%s", all)
	require.Len(t, all.jsonLines(t), 2)
	require.Equal(t, 1, strings.Count(all.stdout, `"unreadable":"`), "only the unreadable event carries a reason")
}

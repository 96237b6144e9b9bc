package paypal_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/paypal"
)

func TestNew(t *testing.T) {
	t.Parallel()
	info := func(orders, payments time.Duration) payonce.ProviderInfo {
		return payonce.ProviderInfo{KeyTTL: payments, MaxKeyLength: 108, KindKeyTTL: map[payonce.Kind]time.Duration{payonce.KindCharge: orders},
			LookupProvesAbsence: false, RefundsCapture: true, WebhookRedelivery: 72 * time.Hour}
	}
	noLag := func(*paypal.Provider) time.Duration { return 0 }
	testkit.RequireNew(t, paypal.New, "paypal", noLag,
		testkit.NewCase[paypal.Config]{Name: "defaults", Cfg: paypal.Config{ClientID: testClientID, ClientSecret: testSecret},
			Info: info(6*time.Hour, 45*24*time.Hour), BaseURL: "https://api-m.paypal.com"},
		testkit.NewCase[paypal.Config]{Name: "72 h orders window, sandbox", Cfg: paypal.Config{ClientID: testClientID, ClientSecret: testSecret,
			BaseURL: paypal.SandboxBaseURL + "/", OrdersKeyTTL: 72 * time.Hour, PaymentsKeyTTL: time.Hour},
			Info: info(72*time.Hour, time.Hour), BaseURL: "https://api-m.sandbox.paypal.com"},
	)
	p, err := paypal.New(paypal.Config{ClientID: testClientID, ClientSecret: testSecret})
	require.NoError(t, err)
	shortest, longest := p.Info().KeyTTLRange()
	require.Equal(t, 6*time.Hour, shortest, "margins fit the Orders window")
	require.Equal(t, 45*24*time.Hour, longest)
	require.Equal(t, 6*time.Hour, p.Info().KeyTTLFor(payonce.KindCharge))
	require.Equal(t, 45*24*time.Hour, p.Info().KeyTTLFor(payonce.KindRefund))
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	ok := paypal.Config{ClientID: testClientID, ClientSecret: testSecret}
	with := func(f func(*paypal.Config)) paypal.Config { c := ok; f(&c); return c }
	testkit.RequireConfigErrors(t, paypal.New, []testkit.ConfigCase[paypal.Config]{
		{Name: "no client id", Cfg: paypal.Config{ClientSecret: testSecret}, Field: "paypal.Config.ClientID", Hint: "PAYPAL_CLIENT_ID"},
		{Name: "no secret", Cfg: paypal.Config{ClientID: testClientID}, Field: "paypal.Config.ClientSecret", Hint: "PAYPAL_CLIENT_SECRET"},
		{Name: "secret with newline", Cfg: with(func(c *paypal.Config) { c.ClientSecret = testSecret + "\n" }), Field: "paypal.Config.ClientSecret", Hint: "exactly"},
		{Name: "client id with space", Cfg: with(func(c *paypal.Config) { c.ClientID = "a b" }), Field: "paypal.Config.ClientID", Hint: "exactly"},
		{Name: "relative URL", Cfg: with(func(c *paypal.Config) { c.BaseURL = "api-m.paypal.com" }), Field: "paypal.Config.BaseURL", Hint: "https://"},
		{Name: "user info", Cfg: with(func(c *paypal.Config) { c.BaseURL = "https://" + testClientID + ":" + testSecret + "@api-m.paypal.com" }), Field: "paypal.Config.BaseURL", Hint: "ClientSecret"},
		{Name: "orders window over 72 h", Cfg: with(func(c *paypal.Config) { c.OrdersKeyTTL = 73 * time.Hour }), Field: "paypal.Config.OrdersKeyTTL", Hint: "at most 72h0m0s"},
		{Name: "negative orders window", Cfg: with(func(c *paypal.Config) { c.OrdersKeyTTL = -time.Hour }), Field: "paypal.Config.OrdersKeyTTL", Hint: "negative"},
		{Name: "payments window over 45 days", Cfg: with(func(c *paypal.Config) { c.PaymentsKeyTTL = 46 * 24 * time.Hour }), Field: "paypal.Config.PaymentsKeyTTL", Hint: "at most"},
		{Name: "negative payments window", Cfg: with(func(c *paypal.Config) { c.PaymentsKeyTTL = -1 }), Field: "paypal.Config.PaymentsKeyTTL", Hint: "negative"},
		{Name: "negative audit interval", Cfg: with(func(c *paypal.Config) { c.AuditInterval = -1 }), Field: "paypal.Config.AuditInterval", Hint: "negative"},
		{Name: "unknown verification", Cfg: with(func(c *paypal.Config) { c.WebhookVerification = "both" }), Field: "paypal.Config.WebhookVerification", Hint: "VerifyOffline"},
		{Name: "webhook id with newline", Cfg: with(func(c *paypal.Config) { c.WebhookID = "WH-1\n" }), Field: "paypal.Config.WebhookID", Hint: "webhook id exactly"},
		{Name: "cert host with path", Cfg: with(func(c *paypal.Config) { c.WebhookCertHosts = []string{"api.paypal.com/certs"} }), Field: "paypal.Config.WebhookCertHosts", Hint: "host"},
	}, testClientID, testSecret)
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{paypal.EnvClientID: testClientID, paypal.EnvClientSecret: testSecret}
	cfg := paypal.FromEnv(paypal.Config{BaseURL: paypal.SandboxBaseURL}, func(k string) string { return env[k] })
	require.Equal(t, testClientID, cfg.ClientID)
	require.Equal(t, testSecret, cfg.ClientSecret)
	require.Equal(t, paypal.SandboxBaseURL, cfg.BaseURL)
}

// TestCredentialsNeverLeak checks every place a credential or the access
// token could escape: formatting of Config and Provider, slog, errors,
// Outcomes and LookupResults, even when PayPal echoes them.
func TestCredentialsNeverLeak(t *testing.T) {
	t.Parallel()
	b := setup(t)
	authorize(t, b, vaultCharge()) // the token is now known to the adapter
	cfg := paypal.Config{ClientID: testClientID, ClientSecret: testSecret, BaseURL: "https://" + testSecret + ":x@example.com"}

	_, errURL := paypal.New(paypal.Config{ClientID: testClientID, ClientSecret: testSecret, BaseURL: "ftp://" + testSecret})
	_, errKey := paypal.New(paypal.Config{ClientID: testClientID, ClientSecret: testSecret + " "})
	_, errReq := b.P.NewRequest(context.Background(), withKind(vaultCharge(), payonce.KindCapture, 0, ""))
	errs := []error{errURL, errKey, errReq}

	echo := `{"name":"` + testToken + `","message":"bad ` + testSecret + ` ` + testClientID + `","debug_id":"` + testToken + `","details":[{"issue":"` + testToken + `","description":"A21AAsomeothertoken0123456789"}]}`
	texts := []string{fmt.Sprintf("%+v", b.P.Classify(vaultCharge(), 201, http.Header{}, []byte(orderJSON("O-1", testToken, "CAPTURE", opID, opID, ""))))}

	b.MT.RegisterResponder(http.MethodGet, base+"/v2/payments/captures/CAP-ERR", func(*http.Request) (*http.Response, error) { return respond(403, echo), nil })
	b.MT.RegisterResponder(http.MethodGet, base+"/v2/payments/captures/CAP-BAD", func(*http.Request) (*http.Response, error) {
		return respond(200, capJSON("CAP-BAD", testToken, "19.99", opID, opID)), nil
	})
	for _, ref := range []string{"CAP-ERR", "CAP-BAD"} {
		res, err := b.P.Lookup(context.Background(), b.HC, payonce.LookupQuery{OperationID: opID, Key: opID, Request: vaultCharge().Request, ProviderRef: ref})
		errs = append(errs, err)
		texts = append(texts, fmt.Sprintf("%+v", res))
	}
	// A token endpoint that echoes the credentials.
	bad := testkit.Setup(t, paypal.New, paypal.Config{ClientID: testClientID, ClientSecret: testSecret})
	bad.MT.RegisterResponder(http.MethodPost, base+"/v1/oauth2/token", func(*http.Request) (*http.Response, error) {
		return respond(401, `{"error":"invalid_client","error_description":"`+testSecret+` `+testClientID+`"}`), nil
	})
	hr, err := bad.P.NewRequest(context.Background(), vaultCharge())
	require.NoError(t, err)
	errs = append(errs, bad.P.AuthorizeRequest(context.Background(), bad.HC, hr))

	testkit.RequireNoLeak(t, testkit.LeakCheck{
		Secrets: []string{testClientID, testSecret, testToken, "A21AAsomeothertoken"},
		Values:  []any{cfg, &cfg, b.P, *b.P}, Errors: errs, Texts: texts,
		Provider: b.P, Request: vaultCharge(), Echo: echo, Header: http.Header{},
		Statuses: []int{400, 401, 403, 404, 409, 422, 429, 500, 503},
	})
}

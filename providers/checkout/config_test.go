package checkout_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/checkout"
)

func TestNew(t *testing.T) {
	t.Parallel()
	testkit.RequireNew(t, checkout.New, "checkout", (*checkout.Provider).SettleLag,
		testkit.NewCase[checkout.Config]{Name: "defaults", Cfg: checkout.Config{SecretKey: testKey},
			Info: payonce.ProviderInfo{KeyTTL: 24 * time.Hour, MaxKeyLength: 36, LookupProvesAbsence: true, WebhookRedelivery: 30 * time.Hour}, Lag: 2 * time.Minute, BaseURL: "https://api.checkout.com"},
		testkit.NewCase[checkout.Config]{Name: "overrides", Cfg: checkout.Config{SecretKey: testKey, BaseURL: checkout.SandboxBaseURL + "/",
			KeyTTL: 48 * time.Hour, SettleLag: time.Minute, ProcessingChannelID: "pc_abc"},
			Info: payonce.ProviderInfo{KeyTTL: 48 * time.Hour, MaxKeyLength: 36, LookupProvesAbsence: true, WebhookRedelivery: 30 * time.Hour}, Lag: time.Minute, BaseURL: "https://api.sandbox.checkout.com"},
	)
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	testkit.RequireConfigErrors(t, checkout.New, []testkit.ConfigCase[checkout.Config]{
		{Name: "no key", Cfg: checkout.Config{}, Field: "checkout.Config.SecretKey", Hint: "secret key"},
		{Name: "key with space", Cfg: checkout.Config{SecretKey: "sk_a b"}, Field: "checkout.Config.SecretKey", Hint: "exactly"},
		{Name: "bad channel", Cfg: checkout.Config{SecretKey: testKey, ProcessingChannelID: "pc 1"}, Field: "checkout.Config.ProcessingChannelID", Hint: "pc_"},
		{Name: "relative URL", Cfg: checkout.Config{SecretKey: testKey, BaseURL: "api.checkout.com"}, Field: "checkout.Config.BaseURL", Hint: "https://"},
		{Name: "no host", Cfg: checkout.Config{SecretKey: testKey, BaseURL: "https:///x"}, Field: "checkout.Config.BaseURL", Hint: "host"},
		{Name: "unparsable", Cfg: checkout.Config{SecretKey: testKey, BaseURL: "https://[::1"}, Field: "checkout.Config.BaseURL", Hint: "valid URL"},
		{Name: "user info", Cfg: checkout.Config{SecretKey: testKey, BaseURL: "https://" + testKey + "@api.checkout.com"}, Field: "checkout.Config.BaseURL", Hint: "user info"},
		{Name: "fragment", Cfg: checkout.Config{SecretKey: testKey, BaseURL: "https://api.checkout.com#x"}, Field: "checkout.Config.BaseURL", Hint: "fragment"},
		{Name: "negative TTL", Cfg: checkout.Config{SecretKey: testKey, KeyTTL: -time.Second}, Field: "checkout.Config.KeyTTL", Hint: "negative"},
		{Name: "negative lag", Cfg: checkout.Config{SecretKey: testKey, SettleLag: -time.Second}, Field: "checkout.Config.SettleLag", Hint: "negative"},
	}, testKey)
}

// TestSecretKeyNeverLeaks checks every place the key could escape:
// formatting of Config and Provider, slog, errors, Outcomes and
// LookupResults, even when Checkout.com echoes it.
func TestSecretKeyNeverLeaks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := checkout.Config{SecretKey: testKey, BaseURL: "https://" + testKey + ":x@example.com"}

	_, errURL := checkout.New(checkout.Config{SecretKey: testKey, BaseURL: "ftp://" + testKey})
	_, errKey := checkout.New(checkout.Config{SecretKey: testKey + " "})
	_, errReq := b.P.NewRequest(context.Background(), withKind(chargeReq(), payonce.KindCapture, 0, ""))
	errs := []error{errURL, errKey, errReq}

	echo := `{"request_id":"r","error_type":"` + testKey + `","error_codes":["invalid key ` + testKey + `"]}`
	texts := []string{fmt.Sprintf("%+v", b.P.Classify(chargeReq(), 201, http.Header{}, []byte(`{"id":"pay_1","status":"`+testKey+`","approved":true}`)))}

	getOK(t, b, base+"/payments/pay_err", 401, echo)
	getOK(t, b, base+"/payments/pay_bad", 200, `{"id":"pay_bad","status":"`+testKey+`","approved":true}`)
	for _, ref := range []string{"pay_err", "pay_bad"} {
		res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", ref))
		errs = append(errs, err)
		texts = append(texts, fmt.Sprintf("%+v", res))
	}

	testkit.RequireNoLeak(t, testkit.LeakCheck{
		Secrets: []string{testKey, strings.TrimPrefix(testKey, "sk_sbox_")},
		Values:  []any{cfg, &cfg, b.P, *b.P}, Errors: errs, Texts: texts,
		Provider: b.P, Request: chargeReq(), Echo: echo, Header: http.Header{},
		Statuses: []int{400, 401, 403, 404, 409, 422, 429, 500, 503},
	})

	hr, err := b.P.NewRequest(context.Background(), chargeReq())
	require.NoError(t, err)
	require.Equal(t, "Bearer "+testKey, hr.Header.Get("Authorization"))
}

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
		testkit.Refuse("no key", checkout.Config{}, "checkout.Config.SecretKey", "secret key"),
		testkit.Refuse("key with space", checkout.Config{SecretKey: "sk_a b"}, "checkout.Config.SecretKey", "exactly"),
		testkit.Refuse("bad channel", checkout.Config{SecretKey: testKey, ProcessingChannelID: "pc 1"}, "checkout.Config.ProcessingChannelID", "pc_"),
		testkit.Refuse("relative URL", checkout.Config{SecretKey: testKey, BaseURL: "api.checkout.com"}, "checkout.Config.BaseURL", "https://"),
		testkit.Refuse("no host", checkout.Config{SecretKey: testKey, BaseURL: "https:///x"}, "checkout.Config.BaseURL", "host"),
		testkit.Refuse("unparsable", checkout.Config{SecretKey: testKey, BaseURL: "https://[::1"}, "checkout.Config.BaseURL", "valid URL"),
		testkit.Refuse("user info", checkout.Config{SecretKey: testKey, BaseURL: "https://" + testKey + "@api.checkout.com"}, "checkout.Config.BaseURL", "user info"),
		testkit.Refuse("fragment", checkout.Config{SecretKey: testKey, BaseURL: "https://api.checkout.com#x"}, "checkout.Config.BaseURL", "fragment"),
		testkit.Refuse("negative TTL", checkout.Config{SecretKey: testKey, KeyTTL: -time.Second}, "checkout.Config.KeyTTL", "negative"),
		testkit.Refuse("negative lag", checkout.Config{SecretKey: testKey, SettleLag: -time.Second}, "checkout.Config.SettleLag", "negative"),
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

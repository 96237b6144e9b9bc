package yookassa_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/yookassa"
)

// TestCredentialsNeverLeak checks every place a credential could escape:
// formatting of Config and Provider, slog, errors, Outcomes and
// LookupResults, even when YooKassa echoes them.
func TestCredentialsNeverLeak(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *yookassa.Config) { c.BaseURL = "https://api.yookassa.ru/" })
	cfg := yookassa.Config{ShopID: testShopID, SecretKey: testSecret, BaseURL: "https://" + testShopID + ":" + testSecret + "@example.com"}

	texts := testkit.Printed(cfg, &cfg, b.p, *b.p)

	_, err := yookassa.New(yookassa.Config{ShopID: testShopID, SecretKey: testSecret, BaseURL: "ftp://" + testSecret})
	texts = append(texts, err.Error())
	_, err = yookassa.New(yookassa.Config{ShopID: testShopID, SecretKey: testSecret + " "})
	texts = append(texts, err.Error())
	_, err = b.p.NewRequest(context.Background(), withKind(chargeReq(), payonce.KindCapture, 0, ""))
	texts = append(texts, err.Error())

	echo := `{"type":"error","id":"e1","code":"invalid_credentials","description":"shop ` + testShopID + ` secret ` + testSecret + `"}`
	for _, status := range []int{202, 400, 401, 403, 404, 429, 500, 503} {
		o := b.p.Classify(chargeReq(), status, http.Header{}, []byte(echo))
		j, _ := json.Marshal(o)
		texts = append(texts, fmt.Sprintf("%+v", o), string(j))
	}
	o := b.p.Classify(chargeReq(), 200, http.Header{}, []byte(`{"type":"`+testSecret+`"}`))
	texts = append(texts, fmt.Sprintf("%+v", o))

	b.mt.RegisterResponder(http.MethodGet, base+"/v3/payments/p_err", func(*http.Request) (*http.Response, error) {
		return respond(401, echo), nil
	})
	b.mt.RegisterResponder(http.MethodGet, base+"/v3/payments/p_bad", func(*http.Request) (*http.Response, error) {
		return respond(200, `{"id":"p_bad","status":"`+testSecret+`"}`), nil
	})
	for _, ref := range []string{"p_err", "p_bad"} {
		res, err := b.p.Lookup(context.Background(), b.hc, lookupQuery(payonce.KindCharge, "", ref))
		require.Error(t, err)
		texts = append(texts, fmt.Sprintf("%+v", res), err.Error(), fmt.Sprintf("%+v", err))
	}

	for _, s := range texts {
		require.NotContains(t, s, testSecret)
		require.NotContains(t, s, strings.TrimPrefix(testSecret, "test_"))
		require.NotContains(t, s, testShopID)
	}
	require.Contains(t, fmt.Sprintf("%v", cfg), "[REDACTED]")

	// The credentials do go where they must: the Authorization header.
	hr, err := b.p.NewRequest(context.Background(), chargeReq())
	require.NoError(t, err)
	user, pass, ok := hr.BasicAuth()
	require.True(t, ok)
	require.Equal(t, testShopID, user)
	require.Equal(t, testSecret, pass)
}

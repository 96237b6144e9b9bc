package yookassa_test

import (
	"encoding/base64"
	"net/http"
	"testing"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/yookassa"
)

// Fake credentials; tests check they never leak.
const (
	testShopID = "548213"
	testSecret = "test_FAKEsecretKeyForPayonceTests_0123456789abcdefXYZ"
)

const base = "https://api.yookassa.ru"

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type bundle = testkit.Adapter[*yookassa.Provider]

// setup returns a Provider and an *http.Client whose own mock transport
// answers its requests (testkit.Setup).
func setup(t *testing.T, mod ...func(*yookassa.Config)) bundle {
	t.Helper()
	cfg := yookassa.Config{ShopID: testShopID, SecretKey: testSecret, Now: func() time.Time { return testNow }}
	return testkit.Setup(t, yookassa.New, cfg, mod...)
}

// wire is how the adapter's requests look to YooKassa: HTTP Basic
// authentication with the shop id and the secret key.
var wire = testkit.Wire{
	Authorization: "Basic " + base64.StdEncoding.EncodeToString([]byte(testShopID+":"+testSecret)),
	ContentType:   "application/json",
	KeyHeader:     "Idempotence-Key",
	Bad: func() *http.Response {
		return respond(400, `{"type":"error","code":"invalid_request","description":"bad lookup request"}`)
	},
}

func chargeReq() payonce.SendRequest {
	return testkit.ChargeRequest(120000, "RUB", "2a8c5f2b-000f-5000-9000-1c9d7b3e1a56", "cus_123", map[string]string{"order_id": "42", "shop": "main"})
}

func withKind(r payonce.SendRequest, k payonce.Kind, amount int64, ref string) payonce.SendRequest {
	r = testkit.WithKind(r, k, amount, ref)
	if k == payonce.KindCancel {
		r.Request.Currency = ""
	}
	return r
}

func respond(status int, body string) *http.Response {
	return testkit.Respond(status, body, "Content-Type", "application/json")
}

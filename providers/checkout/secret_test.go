package checkout_test

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
	"github.com/payonce/payonce/providers/checkout"
)

// TestSecretKeyNeverLeaks checks every place the key could escape:
// formatting of Config and Provider, slog, errors, Outcomes and
// LookupResults, even when Checkout.com echoes it.
func TestSecretKeyNeverLeaks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := checkout.Config{SecretKey: testKey, BaseURL: "https://" + testKey + ":x@example.com"}

	texts := testkit.Printed(cfg, &cfg, b.p, *b.p)

	_, err := checkout.New(checkout.Config{SecretKey: testKey, BaseURL: "ftp://" + testKey})
	texts = append(texts, err.Error())
	_, err = checkout.New(checkout.Config{SecretKey: testKey + " "})
	texts = append(texts, err.Error())
	_, err = b.p.NewRequest(context.Background(), withKind(chargeReq(), payonce.KindCapture, 0, ""))
	texts = append(texts, err.Error())

	echo := `{"request_id":"r","error_type":"` + testKey + `","error_codes":["invalid key ` + testKey + `"]}`
	for _, status := range []int{400, 401, 403, 404, 409, 422, 429, 500, 503} {
		o := b.p.Classify(chargeReq(), status, http.Header{}, []byte(echo))
		j, _ := json.Marshal(o)
		texts = append(texts, fmt.Sprintf("%+v", o), string(j))
	}
	o := b.p.Classify(chargeReq(), 201, http.Header{}, []byte(`{"id":"pay_1","status":"`+testKey+`","approved":true}`))
	texts = append(texts, fmt.Sprintf("%+v", o))

	getOK(t, b, base+"/payments/pay_err", 401, echo)
	getOK(t, b, base+"/payments/pay_bad", 200, `{"id":"pay_bad","status":"`+testKey+`","approved":true}`)
	for _, ref := range []string{"pay_err", "pay_bad"} {
		res, err := b.p.Lookup(context.Background(), b.hc, lookupQuery(payonce.KindCharge, "", ref))
		require.Error(t, err)
		texts = append(texts, fmt.Sprintf("%+v", res), err.Error(), fmt.Sprintf("%+v", err))
	}

	secretPart := strings.TrimPrefix(testKey, "sk_sbox_")
	for _, s := range texts {
		require.NotContains(t, s, testKey)
		require.NotContains(t, s, secretPart)
	}
	require.Contains(t, fmt.Sprintf("%v", cfg), "[REDACTED]")

	hr, err := b.p.NewRequest(context.Background(), chargeReq())
	require.NoError(t, err)
	require.Equal(t, "Bearer "+testKey, hr.Header.Get("Authorization"))
}

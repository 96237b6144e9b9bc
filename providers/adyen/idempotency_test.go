package adyen_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/adyen"
)

// TestIdempotencyKeyGolden freezes the wire key: a change here changes the
// key of every unsettled Adyen operation, and Adyen takes the resend for a
// new payment. The values were computed once and checked against an
// independent implementation of the documented derivation (SHA-256 of the
// namespace's 16 bytes and the name, cut to 16 bytes, version 8, RFC 4122
// variant). NEVER update them: a new derivation is a new version.
func TestIdempotencyKeyGolden(t *testing.T) {
	t.Parallel()
	const key = "a9b1c2d3-0000-5000-8000-000000000001"
	for _, tc := range []struct{ merchant, key, want string }{
		{merchant: "PayonceTestMerchant", key: key, want: "7cce7f27-f378-8fcf-af3c-5bd4047706b8"},
		{merchant: "PayonceOtherMerchant", key: key, want: "17165b45-6f5f-8174-8e6a-8c6c4630bc54"},
		{merchant: "payoncetestmerchant", key: key, want: "018e8df5-64e6-8ba1-bc74-d71c441603b4"},
		{merchant: "PayonceTestMerchant", key: "k", want: "a7a3c03b-5d5a-8d96-a017-e8abfb5f9d71"},
		// The NUL that ends the merchant account is not ambiguous.
		{merchant: "A", key: "\x00B", want: "d9e41b2f-86d4-85f1-9e5a-f9a25630e710"},
		{merchant: "A\x00", want: "644d3310-0184-82d1-bb5b-228c03065756"},
	} {
		require.Equal(t, tc.want, adyen.IdempotencyKey(tc.merchant, tc.key), "%q %q", tc.merchant, tc.key)
	}
}

var uuidV8 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestIdempotencyKeyScoped: the wire key is a UUID (Adyen's recommended
// form, within its 64 characters), the same on every build of a request,
// and another for every other merchant account or payonce key.
func TestIdempotencyKeyScoped(t *testing.T) {
	t.Parallel()
	r := chargeReq()
	seen := map[string]bool{}
	for _, m := range []string{merchant, "PayonceOtherMerchant", "payoncetestmerchant", merchant + "2"} {
		for _, k := range []string{r.Key, r.OperationID + "x", "another-key"} {
			w := adyen.IdempotencyKey(m, k)
			require.Regexp(t, uuidV8, w)
			require.LessOrEqual(t, len(w), adyen.MaxKeyLength)
			require.Equal(t, w, adyen.IdempotencyKey(m, k), "deterministic")
			require.False(t, seen[w], "one wire key per merchant account and key")
			seen[w] = true
		}
	}

	// Every request carries it, for every kind, on every build; payonce's
	// key stays in the metadata.
	for _, m := range []string{merchant, "PayonceOtherMerchant"} {
		b := setup(t, func(c *adyen.Config) { c.MerchantAccount = m })
		for _, k := range []payonce.Kind{payonce.KindCharge, payonce.KindCapture, payonce.KindCancel, payonce.KindRefund} {
			sr := r
			if k != payonce.KindCharge {
				sr = withKind(r, k, 100, "PAY1")
			}
			hr, body := testkit.Build(t, b.P, sr)
			require.Equal(t, []string{adyen.IdempotencyKey(m, r.Key)}, hr.Header.Values("Idempotency-Key"), "%s %s", m, k)
			again, _ := testkit.Build(t, b.P, sr)
			require.Equal(t, hr.Header.Get("Idempotency-Key"), again.Header.Get("Idempotency-Key"))
			if k == payonce.KindCharge {
				md := testkit.DecodeJSON(t, body)["metadata"].(map[string]any)
				require.Equal(t, r.Key, md["payonce_key"])
				require.Equal(t, r.OperationID, testkit.DecodeJSON(t, body)["reference"], "the reference stays the operation id")
			}
		}
	}
}

// TestE2ETwoMerchantAccounts is the hole Adyen's company-wide key store
// opens: two merchant accounts of one company charge the same order id.
// payonce's key is the same for both (it knows no account), and Adyen
// answers a key it has seen with the first request's stored answer,
// whatever the request. Each account must get a payment of its own: the
// second must never take the first one's Authorised for its own success.
func TestE2ETwoMerchantAccounts(t *testing.T) {
	t.Parallel()
	const other = "PayonceOtherMerchant"
	clock := mocks.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	fake := mocks.NewAdyen(mocks.AdyenOptions{Options: mocks.Options{Clock: clock.Now, Seed: 11}, MerchantAccounts: []string{other}})
	t.Cleanup(fake.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)

	var results []payonce.Result
	for _, m := range []string{fake.MerchantAccount(), other} {
		p, err := adyen.New(adyen.Config{APIKey: fake.APIKey(), MerchantAccount: m, BaseURL: fake.URL(), Now: clock.Now})
		require.NoError(t, err)
		client, _ := testkit.NewClient(t, p, clock.Now)
		res, err := client.Charge(ctx, eur("order-shared", 1999, false))
		require.NoError(t, err, m)
		require.Equal(t, payonce.ResultSucceeded, res.Status, m)
		results = append(results, res)
	}
	require.Equal(t, results[0].Key, results[1].Key, "payonce's key knows no merchant account")
	require.NotEqual(t, results[0].ProviderRef, results[1].ProviderRef, "each account is paid by a payment of its own")

	tr := fake.Truth()
	require.Len(t, tr.Payments, 2, "two orders, two payments")
	require.Zero(t, tr.Replays, "no account got another's stored answer")
	require.Zero(t, tr.KeyMismatch)
	for i, m := range []string{fake.MerchantAccount(), other} {
		require.Equal(t, results[i].ProviderRef, tr.Payments[i].ID)
		require.Equal(t, adyen.IdempotencyKey(m, results[i].Key), tr.Payments[i].IdempotencyKey, m)
		require.Equal(t, int64(1999), tr.Payments[i].AmountCaptured)
	}
}

package cli_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/cmd/payonce/internal/cli"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
	"github.com/payonce/payonce/providers/stripe"
)

// inReview charges each order through the library against a fake Stripe
// that stores a 500 under the charge's key, on a manual clock, then moves
// the clock past the key window: each charge goes to manual review
// (window_passed) without the test sleeping. It returns the SQLite ledger's
// environment (no credentials) and the operation ids.
func inReview(t *testing.T, orders ...string) (map[string]string, []string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	store, err := ledgersqlite.Open(path, ledgersqlite.Config{})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	clock := mocks.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	fake := mocks.NewStripe(mocks.StripeOptions{Options: mocks.Options{Clock: clock.Now}})
	t.Cleanup(fake.Close)
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL(), Now: clock.Now})
	require.NoError(t, err)
	client, err := payonce.New(providertest.ClientConfig(psp, store, clock.Now))
	require.NoError(t, err)
	var ids []string
	for _, o := range orders {
		key, err := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{o}}.Key()
		require.NoError(t, err)
		fake.Script(mocks.Match{Path: "/v1/payment_intents", IdempotencyKey: key}, mocks.FaultStored500)
		p := payonce.ChargeParams{OrderID: o, Amount: 900, Currency: "USD", PaymentMethod: "pm_card_visa"}
		_, err = client.Charge(ctx, p)
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		ids = append(ids, opID(t, payonce.KindCharge, o))
	}
	clock.Advance(25 * time.Hour)
	for _, o := range orders {
		_, err := client.Charge(ctx, payonce.ChargeParams{OrderID: o, Amount: 900, Currency: "USD", PaymentMethod: "pm_card_visa"})
		require.ErrorIs(t, err, payonce.ErrManualReview)
	}
	require.NoError(t, store.Close())
	return map[string]string{"PAYONCE_LEDGER": "sqlite:" + path}, ids
}

// Recording what the dashboard shows asks the provider nothing, so
// "review resolve --outcome failed|succeeded" needs no credentials; only
// a resend, which asks the provider first, does.
func TestReviewResolveWithoutCredentials(t *testing.T) {
	t.Parallel()
	env, ids := inReview(t, "order-nc1", "order-nc2", "order-nc3")
	resolve := func(env map[string]string, id, outcome string, extra ...string) result {
		args := append([]string{"review", "resolve", id, "--outcome", outcome, "--actor", "alice", "--note", "checked the dashboard"}, extra...)
		return runMain(t, env, args...)
	}
	status := func(id string) string {
		t.Helper()
		r := runMain(t, env, "ops", "show", id, "--json")
		require.Equal(t, 0, r.code, "%s", r)
		return r.jsonObject(t)["operation"].(map[string]any)["status"].(string)
	}

	// A resend without credentials is refused before anything is
	// recorded, saying which variable it needs and that the other
	// outcomes need none.
	r := resolve(env, ids[2], "resend")
	require.Equal(t, 2, r.code, "%s", r)
	require.Contains(t, r.stderr, "STRIPE_API_KEY", "%s", r)
	require.Contains(t, r.stderr, "--outcome succeeded or failed needs none", "%s", r)
	require.Equal(t, string(ledger.StatusManualReview), status(ids[2]))

	// Another provider named still refuses, without credentials too.
	r = resolve(env, ids[0], "failed", "--provider", "yookassa")
	require.Equal(t, 2, r.code, "%s", r)
	require.Contains(t, r.stderr, "is a stripe operation, not yookassa", "%s", r)
	require.Equal(t, string(ledger.StatusManualReview), status(ids[0]))

	r = resolve(env, ids[0], "failed", "--json")
	require.Equal(t, 0, r.code, "%s", r)
	res := r.jsonObject(t)
	require.Equal(t, "failed", res["status"])
	require.Equal(t, "alice", res["resolution"].(map[string]any)["actor"])

	r = resolve(env, ids[1], "succeeded", "--provider-ref", "pi_found_by_hand")
	require.Equal(t, 0, r.code, "%s", r)
	require.Contains(t, r.stdout, "is now succeeded")
	require.Equal(t, string(ledger.StatusSucceeded), status(ids[1]))

	// The library's checks still apply: an operation no longer in review
	// is refused.
	r = resolve(env, ids[0], "succeeded", "--provider-ref", "pi_x")
	require.Equal(t, 2, r.code, "%s", r)
	require.Contains(t, r.stderr, "not in manual review", "%s", r)

	help := runMain(t, nil, "review", "resolve", "-h")
	require.Equal(t, 0, help.code, "%s", help)
	require.Contains(t, help.stdout, "only --outcome resend asks the provider")
}

// A refund (or capture, or cancel) of an order whose charge has not
// settled is refused with its own exit code, 10, so that a script can wait
// and retry it; nothing is sent.
func TestRefundOfUnsettledChargeExits10(t *testing.T) {
	t.Parallel()
	fake, env := fakeStripe(t, sqliteTarget(t), mocks.StripeOptions{})
	base := "--base-url=" + fake.URL()
	key, err := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{"order-unsettled"}}.Key()
	require.NoError(t, err)
	fake.Script(mocks.Match{Path: "/v1/payment_intents", IdempotencyKey: key}, mocks.FaultStored500)
	r := runMain(t, env, "charge", "--order", "order-unsettled", "--amount", "700", "--currency", "USD", "--payment-method", "pm_card_visa", base)
	require.Equal(t, 4, r.code, "%s", r)

	for _, args := range [][]string{
		{"refund", "--order", "order-unsettled", "--amount", "100", "--currency", "USD"},
		{"refund", "--order", "order-unsettled", "--json"},
		{"capture", "--order", "order-unsettled"},
		{"cancel", "--order", "order-unsettled"},
	} {
		r := runMain(t, env, append(args, base)...)
		require.Equal(t, cli.ExitChargeNotSettled, r.code, "%v\n%s", args, r)
		require.Contains(t, r.stderr, "has not settled", "%s", r)
		require.Contains(t, r.stderr, "nothing was sent", "%s", r)
		require.Empty(t, r.stdout, "%s", r)
	}
	require.Zero(t, fake.Truth().Requests["POST /v1/refunds"], "nothing sent")
	require.Zero(t, fake.Truth().Requests["POST /v1/payment_intents/{id}/capture"], "nothing sent")
	require.Zero(t, fake.Truth().Requests["POST /v1/payment_intents/{id}/cancel"], "nothing sent")
}

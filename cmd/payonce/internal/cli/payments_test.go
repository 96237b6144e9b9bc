package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// fakeStripe starts a fake Stripe for one test and returns it with the
// environment that points payonce at a migrated ledger and holds the fake's
// API key.
func fakeStripe(t *testing.T, tg target, opts mocks.StripeOptions) (*mocks.Stripe, map[string]string) {
	t.Helper()
	fake := mocks.NewStripe(opts)
	env := with(tg.env(), "STRIPE_API_KEY", fake.APIKey())
	migrated(t, fake, env)
	return fake, env
}

// migrated closes fake when the test ends, migrates the ledger of env and
// returns the --base-url flag that points at fake.
func migrated(t *testing.T, fake interface {
	URL() string
	Close()
}, env map[string]string) string {
	t.Helper()
	t.Cleanup(fake.Close)
	r := runBinary(t, env, "migrate")
	require.Equal(t, 0, r.code, "%s", r)
	return "--base-url=" + fake.URL()
}

// wantJSON checks r's exit code and returns its JSON object.
func wantJSON(t *testing.T, r result, code int) map[string]any {
	t.Helper()
	require.Equal(t, code, r.code, "%s", r)
	return r.jsonObject(t)
}

// requireNoSecret checks that no output shows the API key.
func requireNoSecret(t *testing.T, env map[string]string, rs ...result) {
	t.Helper()
	for _, r := range rs {
		require.NotContains(t, r.stdout+r.stderr, env["STRIPE_API_KEY"], "the API key was printed")
	}
}

func opID(t *testing.T, kind payonce.Kind, refs ...string) string {
	t.Helper()
	id, err := payonce.Identity{Provider: "stripe", Kind: kind, References: refs}.OperationID()
	require.NoError(t, err)
	return id
}

func TestChargeRefundCaptureCancel(t *testing.T) {
	t.Parallel()
	eachLedger(t, func(t *testing.T, tg target) {
		fake, env := fakeStripe(t, tg, mocks.StripeOptions{})
		base := "--base-url=" + fake.URL()
		charge := func(order, amount, pm string, extra ...string) result {
			args := append([]string{"charge", base, "--order", order, "--amount", amount, "--currency", "USD", "--payment-method", pm, "--json"}, extra...)
			return runBinary(t, env, args...)
		}

		// A charge succeeds once; the same order again is a replay.
		r := charge("order-1", "1999", "pm_card_visa")
		res := wantJSON(t, r, 0)
		require.Equal(t, "succeeded", res["status"])
		require.Equal(t, "charge", res["kind"])
		require.Equal(t, "stripe", res["provider"])
		require.Equal(t, opID(t, payonce.KindCharge, "order-1"), res["operation_id"])
		require.Equal(t, res["operation_id"], res["key"])
		require.True(t, strings.HasPrefix(res["provider_ref"].(string), "pi_"), "%s", r)
		require.Equal(t, false, res["replayed"])
		require.EqualValues(t, 1, res["attempts"])
		for _, k := range []string{"code", "decline_code", "message", "review_code", "review_reason"} {
			require.Contains(t, res, k)
		}
		posts := fake.Truth().Requests["POST /v1/payment_intents"]
		again := charge("order-1", "1999", "pm_card_visa")
		rep := wantJSON(t, again, 0)
		require.Equal(t, true, rep["replayed"])
		require.Equal(t, res["provider_ref"], rep["provider_ref"])
		require.Equal(t, posts, fake.Truth().Requests["POST /v1/payment_intents"], "a replay does not call Stripe")

		// The same order with another amount is refused before anything is sent.
		mismatch := charge("order-1", "2999", "pm_card_visa")
		require.Equal(t, 2, mismatch.code, "%s", mismatch)
		require.Contains(t, mismatch.stderr, "already recorded with a different request")
		require.Empty(t, mismatch.stdout)

		// A declined card: exit 3, and the same again is a replay.
		d := charge("order-2", "500", "pm_card_chargeDeclined")
		dres := wantJSON(t, d, 3)
		require.Equal(t, "failed", dres["status"])
		require.Equal(t, "card_declined", dres["code"])
		require.Equal(t, "generic_decline", dres["decline_code"])
		d2 := charge("order-2", "500", "pm_card_chargeDeclined")
		require.Equal(t, 3, d2.code, "%s", d2)
		require.Equal(t, true, d2.jsonObject(t)["replayed"])
		// Without --json: the result on stdout, what it means on stderr.
		d3 := runBinary(t, env, "charge", base, "--order", "order-2", "--amount", "500", "--currency", "usd", "--payment-method", "pm_card_chargeDeclined")
		require.Equal(t, 3, d3.code, "%s", d3)
		require.Contains(t, d3.stdout, "charge failed (replayed")
		require.Contains(t, d3.stderr, "generic_decline")

		// Refund #1 of order-1, once.
		rf := runBinary(t, env, "refund", base, "--order", "order-1", "--json")
		rfRes := wantJSON(t, rf, 0)
		require.Equal(t, "refund", rfRes["kind"])
		require.Equal(t, "succeeded", rfRes["status"])
		require.True(t, strings.HasPrefix(rfRes["provider_ref"].(string), "re_"), "%s", rf)
		rf2 := runBinary(t, env, "refund", base, "--order", "order-1", "--refund-seq", "1", "--json")
		require.Equal(t, 0, rf2.code, "%s", rf2)
		require.Equal(t, true, rf2.jsonObject(t)["replayed"])
		require.Len(t, fake.Truth().Refunds, 1)

		// Authorize, then capture; authorize, then cancel.
		a := charge("order-3", "4200", "pm_card_visa", "--capture-manual")
		require.Equal(t, 0, a.code, "%s", a)
		c := runBinary(t, env, "capture", base, "--order", "order-3", "--json")
		require.Equal(t, 0, c.code, "%s", c)
		require.Equal(t, "capture", c.jsonObject(t)["kind"])
		p, ok := fake.Truth().Payment(a.jsonObject(t)["provider_ref"].(string))
		require.True(t, ok)
		require.EqualValues(t, 4200, p.AmountCaptured)

		b := charge("order-4", "1300", "pm_card_visa", "--capture-manual", "--customer", "cus_123")
		require.Equal(t, 0, b.code, "%s", b)
		cn := runBinary(t, env, "cancel", base, "--order", "order-4")
		require.Equal(t, 0, cn.code, "%s", cn)
		require.Contains(t, cn.stdout, "cancel succeeded")
		p, ok = fake.Truth().Payment(b.jsonObject(t)["provider_ref"].(string))
		require.True(t, ok)
		require.Equal(t, "canceled", p.Status)
		require.Zero(t, p.AmountCaptured)

		// Capture of an order the ledger has no charge for: exit 2.
		nc := runBinary(t, env, "capture", base, "--order", "order-none")
		require.Equal(t, 2, nc.code, "%s", nc)
		require.Contains(t, nc.stderr, `no charge of order "order-none"`)
		nc2 := runBinary(t, env, "refund", base, "--order", "order-none", "--currency", "USD")
		require.Equal(t, 2, nc2.code, "%s", nc2)
		require.Contains(t, nc2.stderr, "PaymentRef")

		require.Empty(t, fake.Truth().Duplicates(stripe.MetaOperation))
		requireNoSecret(t, env, r, again, mismatch, d, d2, d3, rf, rf2, a, c, b, cn, nc, nc2)

		// The operations, as operators see them.
		list := runBinary(t, env, "ops", "list", "--json")
		require.Equal(t, 0, list.code, "%s", list)
		lines := list.jsonLines(t)
		require.Len(t, lines, 7, "%s", list) // 4 charges, 1 refund, 1 capture, 1 cancel
		for _, l := range lines {
			for _, k := range []string{"id", "key", "provider", "kind", "references", "status", "provider_ref", "attempts", "key_expires_at", "next_check_at"} {
				require.Contains(t, l, k)
			}
		}
		failed := runBinary(t, env, "ops", "list", "--json", "--status", "failed")
		require.Equal(t, 0, failed.code, "%s", failed)
		fl := failed.jsonLines(t)
		require.Len(t, fl, 1)
		require.Equal(t, []any{"order-2"}, fl[0]["references"])
		refunds := runBinary(t, env, "ops", "list", "--kind", "refund", "--provider", "stripe")
		require.Equal(t, 0, refunds.code, "%s", refunds)
		require.Contains(t, refunds.stdout, "order-1/1")
		require.Contains(t, refunds.stdout, "STATUS")
		none := runBinary(t, env, "ops", "list", "--provider", "adyen")
		require.Equal(t, 0, none.code, "%s", none)
		require.Contains(t, none.stdout, "no operations")
		paged := runBinary(t, env, "ops", "list", "--limit", "2")
		require.Equal(t, 0, paged.code, "%s", paged)
		require.Contains(t, paged.stdout, "the next page: --after")

		id := opID(t, payonce.KindCharge, "order-1")
		show := runBinary(t, env, "ops", "show", id)
		require.Equal(t, 0, show.code, "%s", show)
		require.Contains(t, show.stdout, "operation "+id)
		require.Contains(t, show.stdout, "attempts (1)")
		require.Contains(t, show.stdout, "success")
		sj := runBinary(t, env, "ops", "show", id, "--json")
		obj := wantJSON(t, sj, 0)
		require.Equal(t, "succeeded", obj["operation"].(map[string]any)["status"])
		require.EqualValues(t, 1999, obj["operation"].(map[string]any)["request"].(map[string]any)["amount"])
		require.Len(t, obj["attempts"], 1)
		require.NotNil(t, obj["events"])
		missing := runBinary(t, env, "ops", "show", "00000000-0000-5000-8000-000000000000")
		require.Equal(t, 2, missing.code, "%s", missing)
		require.Contains(t, missing.stderr, "no operation with id")
	})
}

// A provider that cannot be reached: nothing is sent, exit 7; the
// reconciler sends it once the provider answers.
func TestProviderUnavailableThenReconcile(t *testing.T) {
	t.Parallel()
	eachLedger(t, func(t *testing.T, tg target) {
		fake, env := fakeStripe(t, tg, mocks.StripeOptions{})
		r := runBinary(t, env, "charge", "--base-url", "http://127.0.0.1:1", "--order", "order-down", "--amount", "700", "--currency", "EUR", "--payment-method", "pm_card_visa", "--json")
		require.Equal(t, 7, r.code, "%s", r)
		require.Equal(t, "pending", r.jsonObject(t)["status"])
		r = runBinary(t, env, "charge", "--base-url", "http://127.0.0.1:1", "--order", "order-down", "--amount", "700", "--currency", "EUR", "--payment-method", "pm_card_visa")
		require.Equal(t, 7, r.code, "%s", r)
		require.Contains(t, r.stderr, "nothing was sent")

		pending := runBinary(t, env, "ops", "list", "--status", "pending", "--json")
		lines := pending.jsonLines(t)
		require.Len(t, lines, 1, "%s", pending)
		// Nothing is due before its next check (a short backoff).
		due, err := time.Parse(time.RFC3339Nano, lines[0]["next_check_at"].(string))
		require.NoError(t, err)
		time.Sleep(time.Until(due.Add(10 * time.Millisecond)))

		// The base URL from the environment this time.
		rec := runBinary(t, with(env, "PAYONCE_BASE_URL", fake.URL()), "reconcile", "--until-idle", "--json")
		rep := wantJSON(t, rec, 0)
		require.EqualValues(t, 1, rep["settled"], "%s", rec)
		require.EqualValues(t, 1, rep["transitions"].(map[string]any)["pending->succeeded"], "%s", rec)
		require.GreaterOrEqual(t, rep["passes"], float64(2))

		once := runBinary(t, with(env, "PAYONCE_BASE_URL", fake.URL()), "reconcile", "--once")
		require.Equal(t, 0, once.code, "%s", once)
		require.Contains(t, once.stdout, "passes 1: claimed 0")

		done := runBinary(t, env, "charge", "--base-url", fake.URL(), "--order", "order-down", "--amount", "700", "--currency", "EUR", "--payment-method", "pm_card_visa", "--json")
		require.Equal(t, 0, done.code, "%s", done)
		require.Equal(t, true, done.jsonObject(t)["replayed"])
		require.Len(t, fake.Truth().Payments, 1)
	})
}

package cli_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// Stripe stores a 500 under the key of each charge: every resend gets the
// same 500 back, the outcome stays unknown, and once the (short) key window
// has passed the operation goes to review. An operator resolves one by a
// resend under a new key, one as failed, one as succeeded.
func TestReviewListAndResolve(t *testing.T) {
	t.Parallel()
	eachLedger(t, func(t *testing.T, tg target) {
		fake, env := fakeStripe(t, tg, mocks.StripeOptions{})
		tuning := []string{"--base-url", fake.URL(), "--key-ttl", "2s", "--search-lag", "50ms", "--timeout", "1s"}
		orders := []string{"order-r1", "order-r2", "order-r3"}
		for _, o := range orders {
			id, err := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{o}}.Key()
			require.NoError(t, err)
			fake.Script(mocks.Match{Path: "/v1/payment_intents", IdempotencyKey: id}, mocks.FaultStored500)
		}
		charge := func(order string) result {
			args := append([]string{"charge", "--order", order, "--amount", "900", "--currency", "USD", "--payment-method", "pm_card_visa", "--json"}, tuning...)
			return runBinary(t, env, args...)
		}
		for _, o := range orders {
			r := charge(o)
			require.Equal(t, 4, r.code, "%s", r)
			require.Equal(t, "unknown", r.jsonObject(t)["status"])
		}
		// Past the key window, the same call looks up once more and
		// hands the operation to a person: no POST.
		time.Sleep(2100 * time.Millisecond)
		posts := fake.Truth().Requests["POST /v1/payment_intents"]
		for _, o := range orders {
			r := charge(o)
			require.Equal(t, 6, r.code, "%s", r)
			res := r.jsonObject(t)
			require.Equal(t, "manual_review", res["status"])
			require.Equal(t, payonce.ReasonWindowPassed, res["review_reason"])
		}
		r := runBinary(t, env, append([]string{"charge", "--order", "order-r1", "--amount", "900", "--currency", "USD", "--payment-method", "pm_card_visa"}, tuning...)...)
		require.Equal(t, 6, r.code, "%s", r)
		require.Contains(t, r.stderr, "review resolve")
		require.Equal(t, posts, fake.Truth().Requests["POST /v1/payment_intents"], "no POST once the window passed")

		list := runBinary(t, env, "review", "list", "--json")
		require.Equal(t, 0, list.code, "%s", list)
		lines := list.jsonLines(t)
		require.Len(t, lines, 3)
		for _, l := range lines {
			require.Equal(t, payonce.ReasonWindowPassed, l["review_reason"])
			require.NotNil(t, l["review_at"])
		}
		table := runBinary(t, env, "review", "list", "--kind", "charge")
		require.Equal(t, 0, table.code, "%s", table)
		require.Contains(t, table.stdout, "order-r2")
		require.Contains(t, table.stdout, "REASON")

		id1, id2, id3 := opID(t, payonce.KindCharge, "order-r1"), opID(t, payonce.KindCharge, "order-r2"), opID(t, payonce.KindCharge, "order-r3")
		show := runBinary(t, env, "ops", "show", id1)
		require.Equal(t, 0, show.code, "%s", show)
		require.Contains(t, show.stdout, "lookup")
		require.Contains(t, show.stdout, "maybe_sent")

		// Refusals name what to fix and change nothing.
		for _, bad := range []struct {
			args []string
			want string
		}{
			{[]string{"review", "resolve", id1, "--outcome", "maybe", "--actor", "alice", "--note", "n"}, "--outcome"},
			{[]string{"review", "resolve", id1, "--outcome", "failed", "--note", "n"}, "--actor"},
			{[]string{"review", "resolve", id1, "--outcome", "failed", "--actor", "alice"}, "--note"},
			{[]string{"review", "resolve", id1, "--outcome", "succeeded", "--actor", "alice", "--note", "n"}, "--provider-ref"},
			{[]string{"review", "resolve", "--outcome", "failed", "--actor", "alice", "--note", "n"}, "needs ID"},
			{[]string{"review", "resolve", "00000000-0000-5000-8000-000000000000", "--outcome", "failed", "--actor", "alice", "--note", "n"}, "no operation with id"},
		} {
			r := runBinary(t, env, bad.args...)
			require.Equal(t, 2, r.code, "%v\n%s", bad.args, r)
			require.Contains(t, r.stderr, bad.want)
		}

		// Resend under a new key: the reconciler sends it.
		rs := runBinary(t, env, "review", "resolve", id1, "--outcome", "resend", "--actor", "alice", "--note", "no PaymentIntent in the dashboard")
		require.Equal(t, 0, rs.code, "%s", rs)
		require.Contains(t, rs.stdout, "is now pending")
		require.Contains(t, rs.stdout, "generation 1")
		again := runBinary(t, env, "review", "resolve", id1, "--outcome", "failed", "--actor", "alice", "--note", "twice")
		require.Equal(t, 2, again.code, "%s", again)
		require.Contains(t, again.stderr, "not in manual review")

		fl := runBinary(t, env, "review", "resolve", id2, "--outcome", "failed", "--actor", "bob", "--note", "nothing at Stripe", "--json")
		require.Equal(t, 0, fl.code, "%s", fl)
		flRes := fl.jsonObject(t)
		require.Equal(t, "failed", flRes["status"])
		require.Equal(t, "bob", flRes["resolution"].(map[string]any)["actor"])
		ok := runBinary(t, env, "review", "resolve", id3, "--outcome", "succeeded", "--provider-ref", "pi_found_by_hand", "--actor", "carol", "--note", "found it")
		require.Equal(t, 0, ok.code, "%s", ok)

		rec := runBinary(t, env, append([]string{"reconcile", "--until-idle"}, tuning...)...)
		require.Equal(t, 0, rec.code, "%s", rec)
		require.Contains(t, rec.stdout, "pending->succeeded 1")
		sj := runBinary(t, env, "ops", "show", id1, "--json")
		require.Equal(t, 0, sj.code, "%s", sj)
		op := sj.jsonObject(t)["operation"].(map[string]any)
		require.Equal(t, "succeeded", op["status"])
		require.EqualValues(t, 1, op["generation"])
		require.NotEqual(t, id1, op["key"])
		require.Equal(t, "alice", op["resolution"].(map[string]any)["actor"])
		require.Equal(t, 1, fake.Truth().ChargesBy(stripe.MetaOperation)[id1])

		empty := runBinary(t, env, "review", "list")
		require.Equal(t, 0, empty.code, "%s", empty)
		require.Contains(t, empty.stdout, "no operations in review")
		requireNoSecret(t, env, rs, fl, ok, rec, sj, list, table, show)
	})
}

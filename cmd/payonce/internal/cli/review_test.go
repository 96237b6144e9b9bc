package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// requireStoredReview checks the review of a charge whose key holds a
// stored 500: stored_error once two lookups past the search lag found
// nothing (the calls' timing decides whether they did before the window
// passed), else window_passed.
func requireStoredReview(t *testing.T, res map[string]any) {
	t.Helper()
	switch res["review_code"] {
	case string(ledger.ReviewCodeStoredError):
		require.True(t, strings.HasPrefix(res["review_reason"].(string), payonce.ReasonStoredError+": "), "%v", res["review_reason"])
	default:
		require.Equal(t, string(ledger.ReviewCodeWindowPassed), res["review_code"])
		require.Equal(t, payonce.ReasonWindowPassed, res["review_reason"])
	}
}

// Stripe stores a 500 under the key of each charge: every resend gets the
// same 500 back, the outcome stays unknown, and once the (short) key window
// has passed the operation goes to review. An operator resolves one by a
// resend under a new key, one as failed, one as succeeded.
func TestReviewListAndResolve(t *testing.T) {
	t.Parallel()
	eachLedger(t, func(t *testing.T, tg target) {
		fake, env := fakeStripe(t, tg, mocks.StripeOptions{})
		// The clock-skew allowance is small: the fake runs on this clock.
		tuning := []string{"--base-url", fake.URL(), "--key-ttl", "3s", "--search-lag", "50ms", "--timeout", "1s", "--clock-skew", "200ms"}
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
		time.Sleep(3100 * time.Millisecond)
		posts := fake.Truth().Requests["POST /v1/payment_intents"]
		for _, o := range orders {
			r := charge(o)
			require.Equal(t, 6, r.code, "%s", r)
			res := r.jsonObject(t)
			require.Equal(t, "manual_review", res["status"])
			requireStoredReview(t, res)
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
			requireStoredReview(t, l)
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
		rs := runBinary(t, env, append([]string{"review", "resolve", id1, "--outcome", "resend", "--actor", "alice", "--note", "no PaymentIntent in the dashboard"}, tuning...)...)
		require.Equal(t, 0, rs.code, "%s", rs)
		require.Contains(t, rs.stdout, "is now pending")
		require.Contains(t, rs.stdout, "generation 1")
		again := runBinary(t, env, "review", "resolve", id1, "--outcome", "failed", "--actor", "alice", "--note", "twice")
		require.Equal(t, 2, again.code, "%s", again)
		require.Contains(t, again.stderr, "not in manual review")

		fl := runBinary(t, env, append([]string{"review", "resolve", id2, "--outcome", "failed", "--actor", "bob", "--note", "nothing at Stripe", "--json"}, tuning...)...)
		require.Equal(t, 0, fl.code, "%s", fl)
		flRes := fl.jsonObject(t)
		require.Equal(t, "failed", flRes["status"])
		require.Equal(t, "bob", flRes["resolution"].(map[string]any)["actor"])
		ok := runBinary(t, env, append([]string{"review", "resolve", id3, "--outcome", "succeeded", "--provider-ref", "pi_found_by_hand", "--actor", "carol", "--note", "found it"}, tuning...)...)
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

// "review resolve --outcome resend" asks the provider first, under every key
// the operation carried, and refuses while an earlier object succeeded, or
// when the provider cannot be asked: exit 2, the reason on stderr, nothing
// recorded, nothing sent. The state is built through the CLI: the charge is
// processed and its answer lost (a 502 after processing), every lookup
// fails until the key window has passed, so the operation goes to review
// although the fake holds a succeeded PaymentIntent for it.
func TestReviewResolveResendRefused(t *testing.T) {
	t.Parallel()
	eachLedger(t, func(t *testing.T, tg target) {
		fake, env := fakeStripe(t, tg, mocks.StripeOptions{})
		tuning := []string{"--base-url", fake.URL(), "--key-ttl", "3s", "--search-lag", "50ms", "--timeout", "1s", "--clock-skew", "200ms"}
		paid, lost := "order-paid", "order-lost"
		idPaid, idLost := opID(t, payonce.KindCharge, paid), opID(t, payonce.KindCharge, lost)
		// order-paid: charged, the answer lost. order-lost: a stored 500,
		// nothing charged.
		fake.Script(mocks.Match{Path: "/v1/payment_intents", IdempotencyKey: idPaid}, mocks.FaultGatewayAfter502)
		fake.Script(mocks.Match{Path: "/v1/payment_intents", IdempotencyKey: idLost}, mocks.FaultStored500)
		failLookups := func() {
			faults := make([]mocks.FaultKind, 500)
			for i := range faults {
				faults[i] = mocks.FaultGatewayBefore502
			}
			fake.Script(mocks.Match{Method: "GET"}, faults...)
		}
		failLookups()
		charge := func(order string) result {
			return runBinary(t, env, append([]string{"charge", "--order", order, "--amount", "700", "--currency", "USD",
				"--payment-method", "pm_card_visa", "--json"}, tuning...)...)
		}
		for _, o := range []string{paid, lost} {
			r := charge(o)
			require.Equal(t, 4, r.code, "%s", r)
		}
		time.Sleep(3100 * time.Millisecond)
		for _, o := range []string{paid, lost} {
			r := charge(o)
			require.Equal(t, 6, r.code, "%s", r)
		}
		fake.ClearScripts()
		require.Equal(t, 1, fake.Truth().ChargesBy(stripe.MetaOperation)[idPaid], "the fake charged order-paid once")
		require.Zero(t, fake.Truth().ChargesBy(stripe.MetaOperation)[idLost])
		posts := fake.Truth().Requests["POST /v1/payment_intents"]

		resolve := func(id, outcome string, extra ...string) result {
			args := append([]string{"review", "resolve", id, "--outcome", outcome, "--actor", "alice", "--note", "checked"}, tuning...)
			return runBinary(t, env, append(args, extra...)...)
		}
		stillInReview := func(id string) {
			t.Helper()
			sj := runBinary(t, env, "ops", "show", id, "--json")
			require.Equal(t, 0, sj.code, "%s", sj)
			op := sj.jsonObject(t)["operation"].(map[string]any)
			require.Equal(t, "manual_review", op["status"], "%s", sj)
			require.EqualValues(t, 0, op["generation"], "%s", sj)
			require.Nil(t, op["resolution"], "%s", sj)
		}

		// An earlier object succeeded: a resend would charge twice.
		r := resolve(idPaid, "resend")
		require.Equal(t, 2, r.code, "%s", r)
		require.Contains(t, r.stderr, "resend refused", "%s", r)
		require.Contains(t, r.stderr, "stays in review", "%s", r)
		require.Empty(t, r.stdout)
		stillInReview(idPaid)
		r = resolve(idPaid, "resend", "--json")
		require.Equal(t, 2, r.code, "%s", r)
		require.Empty(t, r.stdout)

		// The provider cannot be asked: refused too.
		failLookups()
		r = resolve(idLost, "resend")
		require.Equal(t, 2, r.code, "%s", r)
		require.Contains(t, r.stderr, "resend refused", "%s", r)
		stillInReview(idLost)
		fake.ClearScripts()

		// Bad inputs change nothing either.
		for _, bad := range []struct {
			env  map[string]string
			args []string
			want string
		}{
			{with(env, "YOOKASSA_SHOP_ID", "123456", "YOOKASSA_SECRET_KEY", "test_abcdefghijklmnopqrstuvwxyz"),
				[]string{"--provider", "yookassa"}, "is a stripe operation, not yookassa: resolve it with --provider stripe"},
			{with(tg.env()), nil, "STRIPE_API_KEY"},
			{env, []string{"--clock-skew", "0"}, "--clock-skew must be greater than 0"},
			{env, []string{"--key-ttl", "48h"}, "longer than the key TTL stripe documents"},
		} {
			args := append([]string{"review", "resolve", idPaid, "--outcome", "resend", "--actor", "alice", "--note", "n", "--base-url", fake.URL()}, bad.args...)
			r := runBinary(t, bad.env, args...)
			require.Equal(t, 2, r.code, "%v\n%s", bad.args, r)
			require.Contains(t, r.stderr, bad.want, "%s", r)
		}
		stillInReview(idPaid)
		require.Equal(t, posts, fake.Truth().Requests["POST /v1/payment_intents"], "a refused resolve sends nothing")

		// Where nothing was charged and the provider answers, the resend is
		// recorded; where the charge succeeded, the operator records that.
		ok := resolve(idLost, "resend")
		require.Equal(t, 0, ok.code, "%s", ok)
		require.Contains(t, ok.stdout, "generation 1")
		pi := ""
		for _, p := range fake.Truth().Payments {
			if p.Metadata[stripe.MetaOperation] == idPaid {
				pi = p.ID
			}
		}
		require.NotEmpty(t, pi)
		done := resolve(idPaid, "succeeded", "--provider-ref", pi, "--json")
		require.Equal(t, 0, done.code, "%s", done)
		require.Equal(t, "succeeded", done.jsonObject(t)["status"])
		require.Equal(t, 1, fake.Truth().ChargesBy(stripe.MetaOperation)[idPaid])
		requireNoSecret(t, env, r, ok, done)
	})
}

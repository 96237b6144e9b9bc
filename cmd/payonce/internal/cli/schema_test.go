package cli_test

import (
	"context"
	"crypto/rand"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/mocks"
)

// newDatabase creates an empty database of its own on the test server and
// drops it when the test ends, returning its URL. Schemas named by reserved
// words (user, order) cannot be given unique names, so the test gets a
// database to itself instead.
func newDatabase(t *testing.T) string {
	t.Helper()
	base := testkit.URL(t)
	name := "payonce_cli_" + strings.ToLower(rand.Text())
	cfg, err := pgx.ParseConfig(base)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	require.NoError(t, err)
	testkit.DropOnCleanup(t, cfg, "database "+name, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	u, err := url.Parse(base)
	require.NoError(t, err)
	u.Path = "/" + name
	return u.String()
}

// A schema named by a reserved word (user, order) or with capitals works
// like any other: migrate, charge, ops list and ops show all use it. The
// schema name is an identifier and is quoted wherever it reaches SQL.
// (migrate used to succeed and every later command fail with a syntax
// error: the schema version check put the name into SQL unquoted.)
func TestReservedWordSchemas(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	fake := mocks.NewStripe(mocks.StripeOptions{})
	t.Cleanup(fake.Close)
	schemas := []string{"user", "order", "PayOnce_Mixed", "Pay Once", `odd"name`}
	// The schemas are used at once, each by its own commands.
	t.Run("schemas", func(t *testing.T) {
		for i, schema := range schemas {
			t.Run(schema, func(t *testing.T) {
				t.Parallel()
				useSchema(t, db, fake, schema, i == 1)
			})
		}
	})

	// The tables are in the schemas of exactly those names, and nowhere else.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT schemaname FROM pg_tables WHERE tablename = 'payonce_operations' ORDER BY schemaname")
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.ElementsMatch(t, schemas, got)

	// A schema that was never migrated says so, whatever its name.
	for _, schema := range []string{"select", "Other_Mixed"} {
		r := runBinary(t, map[string]string{"PAYONCE_LEDGER": db}, "ops", "list", "--schema", schema)
		require.Equal(t, 2, r.code, "schema %q: %s", schema, r)
		require.Contains(t, r.stderr, "no payonce tables", "schema %q: %s", schema, r)
	}
	require.Len(t, fake.Truth().Payments, len(schemas), "one charge per schema")
}

// useSchema migrates the schema, charges one order in it and reads it back
// with ops list and ops show; fromEnv gives the schema as PAYONCE_SCHEMA
// instead of --schema.
func useSchema(t *testing.T, db string, fake *mocks.Stripe, schema string, fromEnv bool) {
	t.Helper()
	env := map[string]string{"PAYONCE_LEDGER": db, "STRIPE_API_KEY": fake.APIKey()}
	flags := []string{"--schema", schema}
	if fromEnv {
		env["PAYONCE_SCHEMA"], flags = schema, nil
	}
	run := func(args ...string) result {
		return runBinary(t, env, append(args, flags...)...)
	}
	m := run("migrate", "--json")
	require.Equal(t, 0, m.code, "schema %q: %s", schema, m)
	require.NotEmpty(t, m.jsonObject(t)["applied"], "schema %q: %s", schema, m)
	again := run("migrate")
	require.Equal(t, 0, again.code, "schema %q: %s", schema, again)
	require.Contains(t, again.stdout, "up to date", "schema %q", schema)

	order := "order-in-" + schema
	c := run("charge", "--base-url", fake.URL(), "--order", order, "--amount", "1500", "--currency", "USD", "--payment-method", "pm_card_visa", "--json")
	require.Equal(t, 0, c.code, "schema %q: %s", schema, c)
	res := c.jsonObject(t)
	require.Equal(t, "succeeded", res["status"], "schema %q: %s", schema, c)
	id := opID(t, payonce.KindCharge, order)
	require.Equal(t, id, res["operation_id"])
	replay := run("charge", "--base-url", fake.URL(), "--order", order, "--amount", "1500", "--currency", "USD", "--payment-method", "pm_card_visa", "--json")
	require.Equal(t, 0, replay.code, "schema %q: %s", schema, replay)
	require.Equal(t, true, replay.jsonObject(t)["replayed"], "schema %q", schema)

	// Each schema holds only its own operation.
	list := run("ops", "list", "--json")
	require.Equal(t, 0, list.code, "schema %q: %s", schema, list)
	lines := list.jsonLines(t)
	require.Len(t, lines, 1, "schema %q: %s", schema, list)
	require.Equal(t, id, lines[0]["id"])
	require.Equal(t, "succeeded", lines[0]["status"])
	table := run("ops", "list", "--status", "succeeded")
	require.Equal(t, 0, table.code, "schema %q: %s", schema, table)
	require.Contains(t, table.stdout, order)

	show := run("ops", "show", id)
	require.Equal(t, 0, show.code, "schema %q: %s", schema, show)
	require.Contains(t, show.stdout, "operation "+id)
	require.Contains(t, show.stdout, "attempts (1)")
	sj := run("ops", "show", id, "--json")
	require.Equal(t, 0, sj.code, "schema %q: %s", schema, sj)
	require.Equal(t, res["provider_ref"], sj.jsonObject(t)["operation"].(map[string]any)["provider_ref"])
	missing := run("ops", "show", opID(t, payonce.KindCharge, "no-such-order"))
	require.Equal(t, 2, missing.code, "schema %q: %s", schema, missing)
	require.Contains(t, missing.stderr, "no operation with id")
	require.Contains(t, missing.stderr, "(schema "+schema+")")

	rl := run("review", "list")
	require.Equal(t, 0, rl.code, "schema %q: %s", schema, rl)
	require.Contains(t, rl.stdout, "no operations in review")
	requireNoSecret(t, env, m, c, list, show, sj)
}

package testkit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
)

func TestURLSkipsWithoutDatabase(t *testing.T) {
	t.Setenv(testkit.EnvURL, "")
	t.Setenv(testkit.EnvRequire, "")
	skipped := false
	t.Run("inner", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		testkit.URL(t)
	})
	require.True(t, skipped)
}

func TestNewSchemaIsDroppedAfterTheTest(t *testing.T) {
	t.Parallel()
	pool := testkit.NewPool(t)
	exists := func(name string) bool {
		var ok bool
		err := pool.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", name).Scan(&ok)
		require.NoError(t, err)
		return ok
	}
	var a, b string
	t.Run("inner", func(t *testing.T) {
		a, b = testkit.NewSchema(t, pool), testkit.NewSchema(t, pool)
		require.NotEqual(t, a, b)
		require.True(t, exists(a))
		_, err := pool.Exec(t.Context(), "CREATE TABLE "+a+".t (x int)")
		require.NoError(t, err)
	})
	require.False(t, exists(a), "dropped with its tables")
	require.False(t, exists(b))
}

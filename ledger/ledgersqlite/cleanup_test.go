package ledgersqlite_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

var cleanedAt = t0.Add(30 * 24 * time.Hour)

func cleanupAt(now time.Time) ledger.CleanupParams {
	return ledger.CleanupParams{Now: now, Retention: 48 * time.Hour, KeyTTL: 24 * time.Hour}
}

// finishedOp records id and finishes it as succeeded a second after t0.
func finishedOp(t *testing.T, s *ledgersqlite.Store, id string) ledger.NewOperation {
	t.Helper()
	op := newOp(id)
	res, err := s.Begin(t.Context(), begin(op, "w", t0, true))
	require.NoError(t, err)
	_, err = s.Finish(t.Context(), succeed(id, "w", t0.Add(time.Second), res.Attempt.Number))
	require.NoError(t, err)
	return op
}

// A tombstone keeps the amount and the currency of the request it no longer
// holds, for operators reading the table.
func TestTombstoneColumns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := dbPath(t)
	s := openAt(t, path)
	finishedOp(t, s, "op-1")
	_, err := s.Cleanup(ctx, cleanupAt(cleanedAt))
	require.NoError(t, err)
	var (
		amount                          int64
		currency, status, ref, result   string
		finishedAt, tombstonedAt, ttlMS int64
	)
	require.NoError(t, rawDB(t, path).QueryRow(`SELECT amount, currency, status, provider_ref, result, finished_at, tombstoned_at, key_ttl_ms
		FROM payonce_tombstones WHERE id = 'op-1'`).Scan(&amount, &currency, &status, &ref, &result, &finishedAt, &tombstonedAt, &ttlMS))
	require.Equal(t, int64(1000), amount)
	require.Equal(t, "EUR", currency)
	require.Equal(t, "succeeded", status)
	require.Equal(t, "pi_op-1", ref)
	require.JSONEq(t, `{"status":"succeeded"}`, result)
	require.Equal(t, t0.Add(time.Second).UnixMicro(), finishedAt)
	require.Equal(t, cleanedAt.UnixMicro(), tombstonedAt)
	require.Equal(t, int64(24*time.Hour/time.Millisecond), ttlMS)
}

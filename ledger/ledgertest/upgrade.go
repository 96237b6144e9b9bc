package ledgertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// RequireUpgradedFromVersion1 checks a store just migrated from schema
// version 1, where a version 1 build (the store's test writes its rows with
// raw SQL) left two operations: op1 (ID "op-1", key "op-1") sent once at t0
// and waiting for a lookup, status unknown, one attempt finished maybe_sent
// with error "timeout" at t0+1s, window from t0, key expiring at t0+24h,
// lease of "w" and next check at t0+1m, updated at t0+1s; and op2 ("op-2")
// only recorded at t0, pending. The upgraded store must read them with
// their data intact (the attempt not replayed), record events for them, and
// finish and clean them up with tombstones.
func RequireUpgradedFromVersion1(t *testing.T, s ledger.Store, op1 ledger.NewOperation, t0 time.Time) {
	t.Helper()
	ctx := t.Context()
	got, gotAtts, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	require.Equal(t, ledger.Operation{
		ID: "op-1", Key: "op-1", Provider: "stripe", Kind: "charge", References: op1.References, Fingerprint: op1.Fingerprint,
		Request: op1.Request, Status: ledger.StatusUnknown, Attempts: 1, KeyTTL: 24 * time.Hour,
		WindowStart: t0, KeyExpiresAt: t0.Add(24 * time.Hour), LeaseOwner: "w", LeaseExpiresAt: t0.Add(time.Minute), NextCheckAt: t0.Add(time.Minute),
		CreatedAt: t0, UpdatedAt: t0.Add(time.Second),
	}, got)
	require.Equal(t, []ledger.Attempt{{
		OperationID: "op-1", Number: 1, Key: "op-1", StartedAt: t0, FinishedAt: t0.Add(time.Second), MayHaveReached: true,
		Outcome: ledger.OutcomeMaybeSent, Error: "timeout",
	}}, gotAtts, "an attempt of version 1 was not replayed")
	got2, _, err := s.Get(ctx, "op-2")
	require.NoError(t, err)
	require.Equal(t, ledger.StatusPending, got2.Status)
	require.Empty(t, mustEvents(t, s, "op-1"))

	_, err = s.Finish(ctx, ledger.FinishParams{
		ID: "op-1", Owner: "w", Now: t0.Add(time.Minute), From: ledger.StatusUnknown, To: ledger.StatusSucceeded, ProviderRef: "pi_1",
		Events: []ledger.NewEvent{{Kind: ledger.EventLookup, Detail: `{"status":"succeeded"}`}},
	})
	require.NoError(t, err)
	require.Equal(t, []ledger.Event{{OperationID: "op-1", Seq: 1, At: t0.Add(time.Minute), Kind: ledger.EventLookup, Actor: "w", Detail: `{"status":"succeeded"}`}},
		mustEvents(t, s, "op-1"))

	rep, err := s.Cleanup(ctx, ledger.CleanupParams{Now: t0.Add(30 * 24 * time.Hour), Retention: 48 * time.Hour, KeyTTL: 24 * time.Hour})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Tombstoned)
	tomb, _, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	require.True(t, tomb.Tombstone)
	require.Equal(t, "pi_1", tomb.ProviderRef)
}

package payonce_test

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
)

// jsonKeys marshals v and returns its object's keys, sorted, and the object.
func jsonKeys(t *testing.T, v any) ([]string, map[string]any) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return slices.Sorted(maps.Keys(m)), m
}

// The JSON names of what a handler answers with are part of the API.
func TestResultJSON(t *testing.T) {
	t.Parallel()
	full := payonce.Result{
		OperationID: "op", Key: "k", Provider: "stripe", Kind: payonce.KindCharge,
		Status: payonce.ResultFailed, ProviderRef: "pi_1", Code: "card_declined",
		DeclineCode: "insufficient_funds", Message: "no", Attempts: 2, Replayed: true,
		ReviewReason: "why",
	}
	keys, m := jsonKeys(t, full)
	require.Equal(t, []string{"attempts", "code", "decline_code", "key", "kind", "message", "operation_id",
		"provider", "provider_ref", "replayed", "review_reason", "status"}, keys)
	require.Equal(t, "charge", m["kind"])
	require.Equal(t, "failed", m["status"])
	require.Equal(t, 2.0, m["attempts"])
	require.Equal(t, true, m["replayed"])

	// What the provider or the ledger did not say is left out; what a
	// handler always needs is not.
	keys, _ = jsonKeys(t, payonce.Result{OperationID: "op", Key: "k", Provider: "stripe",
		Kind: payonce.KindRefund, Status: payonce.ResultPending})
	require.Equal(t, []string{"attempts", "key", "kind", "operation_id", "provider", "replayed", "status"}, keys)

	var back payonce.Result
	b, err := json.Marshal(full)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, full, back, "a Result survives a round trip through its JSON form")
}

func TestDeclinedErrorAndReportJSON(t *testing.T) {
	t.Parallel()
	keys, m := jsonKeys(t, &payonce.DeclinedError{Provider: "stripe", Code: "card_declined", DeclineCode: "generic_decline",
		Message: "no", ProviderRef: "pi_1", HTTPStatus: 402, RequestID: "req_1"})
	require.Equal(t, []string{"code", "decline_code", "http_status", "message", "provider", "provider_ref", "request_id"}, keys)
	require.Equal(t, 402.0, m["http_status"])
	keys, _ = jsonKeys(t, &payonce.DeclinedError{Provider: "stripe"})
	require.Equal(t, []string{"provider"}, keys)

	keys, m = jsonKeys(t, payonce.ReconcileReport{Claimed: 3, Settled: 2, Skipped: 1, Released: 0,
		Transitions: map[string]int{"unknown->succeeded": 2}, Errors: []error{errors.New("x")}, ErrorCount: 1})
	require.Equal(t, []string{"audit_differences", "audits", "claimed", "error_count", "released", "settled", "skipped", "transitions"}, keys)
	require.Equal(t, map[string]any{"unknown->succeeded": 2.0}, m["transitions"])
}

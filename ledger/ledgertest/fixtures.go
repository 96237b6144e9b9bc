package ledgertest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// base is the instant every scenario starts from. Scenarios move time
// explicitly from it; nothing sleeps and nothing reads the system clock.
var base = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const (
	ownerA   = "worker-a"
	ownerB   = "worker-b"
	leaseFor = 5 * time.Minute
	keyTTL   = 24 * time.Hour
)

// at returns base moved by d.
func at(d time.Duration) time.Time { return base.Add(d) }

// NewOp returns a valid operation for id at generation 0: a charge of
// 1000 EUR with stripe, whose key is its ID and whose key TTL is a day. The
// stores' own tests use it too.
func NewOp(id string) ledger.NewOperation {
	req := fmt.Appendf(nil, `{"amount":1000,"currency":"EUR","order":%q}`, id)
	return ledger.NewOperation{
		ID:          id,
		Key:         id,
		Provider:    "stripe",
		Kind:        "charge",
		References:  []string{"order", id},
		Fingerprint: fingerprintOf(req),
		Request:     req,
		KeyTTL:      keyTTL,
	}
}

// newOpFor returns NewOp(id) for another provider and kind.
func newOpFor(id, provider, kind string) ledger.NewOperation {
	op := NewOp(id)
	op.Provider, op.Kind = provider, kind
	return op
}

// OtherRequest returns op with a different request and fingerprint: the same
// identity used for another request.
func OtherRequest(op ledger.NewOperation) ledger.NewOperation {
	req := fmt.Appendf(nil, `{"amount":999999,"currency":"EUR","order":%q}`, op.ID)
	op.Request, op.Fingerprint = req, fingerprintOf(req)
	return op
}

func fingerprintOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func beginParams(op ledger.NewOperation, owner string, now time.Time, start bool) ledger.BeginParams {
	return ledger.BeginParams{Op: op, Owner: owner, Now: now, LeaseUntil: now.Add(leaseFor), StartAttempt: start}
}

func mustBegin(t *testing.T, s ledger.Store, p ledger.BeginParams) ledger.BeginResult {
	t.Helper()
	res, err := s.Begin(t.Context(), p)
	require.NoError(t, err, "Begin %s by %s", p.Op.ID, p.Owner)
	return res
}

// mustStart begins op with StartAttempt as owner at now and requires that an
// attempt was started.
func mustStart(t *testing.T, s ledger.Store, op ledger.NewOperation, owner string, now time.Time) (ledger.Operation, ledger.Attempt) {
	t.Helper()
	res := mustBegin(t, s, beginParams(op, owner, now, true))
	require.True(t, res.Claimed, "Begin %s: not claimed", op.ID)
	require.NotNil(t, res.Attempt, "Begin %s: no attempt started", op.ID)
	require.Equal(t, ledger.StatusInFlight, res.Op.Status)
	return res.Op, *res.Attempt
}

func mustCreate(t *testing.T, s ledger.Store, op ledger.NewOperation, now time.Time) ledger.Operation {
	t.Helper()
	got, created, err := s.CreateOrGet(t.Context(), op, now)
	require.NoError(t, err, "CreateOrGet %s", op.ID)
	require.True(t, created, "CreateOrGet %s: not created", op.ID)
	return got
}

func mustClaim(t *testing.T, s ledger.Store, id, owner string, now time.Time) ledger.Operation {
	t.Helper()
	got, err := s.Claim(t.Context(), ledger.ClaimParams{ID: id, Owner: owner, Now: now, LeaseUntil: now.Add(leaseFor)})
	require.NoError(t, err, "Claim %s by %s", id, owner)
	return got
}

func mustStartAttempt(t *testing.T, s ledger.Store, id, owner string, now time.Time) (ledger.Operation, ledger.Attempt) {
	t.Helper()
	op, att, err := s.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: id, Owner: owner, Now: now, LeaseUntil: now.Add(leaseFor)})
	require.NoError(t, err, "StartAttempt %s by %s", id, owner)
	return op, att
}

func mustFinish(t *testing.T, s ledger.Store, p ledger.FinishParams) ledger.Operation {
	t.Helper()
	got, err := s.Finish(t.Context(), p)
	require.NoError(t, err, "Finish %s %s -> %s", p.ID, p.From, p.To)
	require.Equal(t, p.To, got.Status)
	return got
}

// mustFinishUnknown finishes attempt a.Number of operation id, held by
// owner, in_flight -> unknown with outcome a, keeping the lease: the owner
// goes on with the next attempt.
func mustFinishUnknown(t *testing.T, s ledger.Store, id, owner string, now time.Time, a *ledger.AttemptOutcome) ledger.Operation {
	t.Helper()
	return mustFinish(t, s, ledger.FinishParams{
		ID: id, Owner: owner, Now: now, From: ledger.StatusInFlight, To: ledger.StatusUnknown,
		Attempt: a, KeepLease: true,
	})
}

func mustGet(t *testing.T, s ledger.Store, id string) (ledger.Operation, []ledger.Attempt) {
	t.Helper()
	op, atts, err := s.Get(t.Context(), id)
	require.NoError(t, err, "Get %s", id)
	return op, atts
}

func mustClaimDue(t *testing.T, s ledger.Store, p ledger.ClaimDueParams) []ledger.Operation {
	t.Helper()
	ops, err := s.ClaimDue(t.Context(), p)
	require.NoError(t, err, "ClaimDue")
	return ops
}

// attemptOutcome returns a plausible outcome of attempt number for a move to
// status to.
func attemptOutcome(number int, to ledger.Status) *ledger.AttemptOutcome {
	switch to {
	case ledger.StatusPending:
		return &ledger.AttemptOutcome{Number: number, Class: ledger.OutcomeNotSent, Error: "dial tcp: connection refused"}
	case ledger.StatusSucceeded:
		return &ledger.AttemptOutcome{Number: number, Class: ledger.OutcomeSuccess, HTTPStatus: 200, ProviderRequestID: "req_ok"}
	case ledger.StatusFailed:
		return &ledger.AttemptOutcome{Number: number, Class: ledger.OutcomeRefused, HTTPStatus: 402, ProviderRequestID: "req_declined", Error: "card_declined"}
	case ledger.StatusManualReview:
		return &ledger.AttemptOutcome{Number: number, Class: ledger.OutcomeKeyMismatch, HTTPStatus: 400, ProviderRequestID: "req_mismatch", Error: "idempotency key reused"}
	default:
		return &ledger.AttemptOutcome{Number: number, Class: ledger.OutcomeMaybeSent, HTTPStatus: 504, Error: "context deadline exceeded"}
	}
}

// held is an operation brought to a status by reach. When the status allows
// a lease (everything but succeeded and failed), owner holds it, live at now.
type held struct {
	id    string
	owner string
	now   time.Time
}

// reachOwn is reach for a charge "op-"+name of a provider of its own
// ("psp-"+name), held by ownerA: what a subtest running in parallel with
// others on the same store needs (see reach).
func reachOwn(t *testing.T, s ledger.Store, name string, st ledger.Status) (ledger.NewOperation, held) {
	t.Helper()
	op := newOpFor("op-"+name, "psp-"+name, "charge")
	return op, reach(t, s, op, ownerA, st)
}

// eachReached runs check in a parallel subtest per status st of statuses,
// named after it, on a charge of its own (reachOwn of name+"-"+st) brought
// to st, with what Get returned for it once there (before, beforeAtts).
func eachReached(t *testing.T, s ledger.Store, name string, statuses []ledger.Status,
	check func(t *testing.T, st ledger.Status, op ledger.NewOperation, hd held, before ledger.Operation, beforeAtts []ledger.Attempt)) {
	t.Helper()
	for _, st := range statuses {
		t.Run(string(st), func(t *testing.T) {
			t.Parallel()
			op, hd := reachOwn(t, s, name+"-"+string(st), st)
			before, beforeAtts := mustGet(t, s, op.ID)
			check(t, st, op, hd, before, beforeAtts)
		})
	}
}

// reach records op and brings it to status st through real calls, starting
// at base. Every lease it takes lasts leaseFor; the returned now is a moment
// where the lease is still live. A manual_review operation is re-claimed with
// ClaimDue (IncludeReview, filtered on op.Provider), so give op a provider of
// its own when the store is shared by parallel subtests.
func reach(t *testing.T, s ledger.Store, op ledger.NewOperation, owner string, st ledger.Status) held {
	t.Helper()
	h := held{id: op.ID, owner: owner, now: at(time.Second)}
	if st == ledger.StatusPending {
		mustBegin(t, s, beginParams(op, owner, base, false))
		return h
	}
	mustStart(t, s, op, owner, base)
	if st == ledger.StatusInFlight {
		return h
	}
	fin := ledger.FinishParams{ID: op.ID, Owner: owner, Now: at(time.Second), From: ledger.StatusInFlight, To: st, Attempt: attemptOutcome(1, st)}
	h.now = at(2 * time.Second)
	switch st {
	case ledger.StatusUnknown:
		fin.KeepLease = true
		fin.NextCheckAt = at(time.Minute)
	case ledger.StatusSucceeded:
		fin.ProviderRef = "pi_" + op.ID
		fin.Result = []byte(`{"status":"succeeded"}`)
	case ledger.StatusManualReview:
		fin.ReviewCode, fin.ReviewReason = ledger.ReviewCodeKeyMismatch, "provider holds the key with other parameters"
		fin.NextCheckAt = at(time.Minute)
	}
	mustFinish(t, s, fin)
	if st == ledger.StatusManualReview {
		now := at(2 * time.Minute)
		ops := mustClaimDue(t, s, ledger.ClaimDueParams{Owner: owner, Now: now, LeaseUntil: now.Add(leaseFor), Limit: 10, Provider: op.Provider, IncludeReview: true})
		require.Len(t, ops, 1, "ClaimDue of the operation in review")
		require.Equal(t, op.ID, ops[0].ID)
		h.now = now.Add(time.Second)
	}
	return h
}

// requireTime compares a stored time with the expected one at the stores'
// precision (UTC microseconds).
func requireTime(t *testing.T, want, got time.Time, field string) {
	t.Helper()
	if want.IsZero() {
		require.Truef(t, got.IsZero(), "%s: want zero time, got %v", field, got)
		return
	}
	require.Truef(t, ledgerdriver.UTC(want).Equal(got), "%s: want %v, got %v", field, ledgerdriver.UTC(want), got)
}

func requireLease(t *testing.T, op ledger.Operation, owner string, until time.Time) {
	t.Helper()
	require.Equal(t, owner, op.LeaseOwner, "LeaseOwner of %s", op.ID)
	requireTime(t, until, op.LeaseExpiresAt, "LeaseExpiresAt")
}

func requireNoLease(t *testing.T, op ledger.Operation) {
	t.Helper()
	require.Empty(t, op.LeaseOwner, "LeaseOwner of %s", op.ID)
	requireTime(t, time.Time{}, op.LeaseExpiresAt, "LeaseExpiresAt")
}

// requireIdentity checks that op carries what was recorded for it.
func requireIdentity(t *testing.T, want ledger.NewOperation, got ledger.Operation) {
	t.Helper()
	require.Equal(t, want.ID, got.ID)
	require.Equal(t, want.Key, got.Key)
	require.Equal(t, want.Provider, got.Provider)
	require.Equal(t, want.Kind, got.Kind)
	require.Equal(t, want.References, got.References)
	require.Equal(t, want.Generation, got.Generation)
	require.Equal(t, want.Fingerprint, got.Fingerprint)
	// Byte for byte: the fingerprint is the hash of these bytes.
	require.Equal(t, string(want.Request), string(got.Request), "Request must round-trip byte for byte")
	require.Equal(t, want.KeyTTL, got.KeyTTL)
}

// canon normalizes what may legitimately differ between two reads of the
// same record (empty versus nil slices, time representation) so that a
// method's returned record can be compared with what Get reads back.
func canon(op ledger.Operation) ledger.Operation {
	for _, p := range []*time.Time{&op.WindowStart, &op.KeyExpiresAt, &op.LeaseExpiresAt, &op.NextCheckAt, &op.ReviewAt, &op.CreatedAt, &op.UpdatedAt, &op.FinishedAt} {
		*p = ledgerdriver.UTC(*p)
	}
	if len(op.Result) == 0 {
		op.Result = nil
	}
	if len(op.References) == 0 {
		op.References = nil
	}
	if op.Resolution != nil {
		r := *op.Resolution
		r.At = ledgerdriver.UTC(r.At)
		op.Resolution = &r
	}
	return op
}

func canonAttempt(a ledger.Attempt) ledger.Attempt {
	a.StartedAt = ledgerdriver.UTC(a.StartedAt)
	a.FinishedAt = ledgerdriver.UTC(a.FinishedAt)
	return a
}

// requireStored checks that got (returned by a method) is what Get reads back.
func requireStored(t *testing.T, s ledger.Store, got ledger.Operation) {
	t.Helper()
	stored, _ := mustGet(t, s, got.ID)
	require.Equal(t, canon(stored), canon(got), "the returned operation differs from what Get reads back")
}

// requireUnchanged checks that operation id reads back exactly as before.
func requireUnchanged(t *testing.T, s ledger.Store, before ledger.Operation, beforeAtts []ledger.Attempt) {
	t.Helper()
	after, afterAtts := mustGet(t, s, before.ID)
	require.Equal(t, before, after, "operation %s changed", before.ID)
	require.Equal(t, beforeAtts, afterAtts, "attempts of %s changed", before.ID)
}

// record is one operation with its attempts and audit entries, as a
// snapshot holds it.
type record struct {
	Op       ledger.Operation
	Attempts []ledger.Attempt
	Events   []ledger.Event
}

// snapshot reads every operation, attempt and audit entry of the store.
func snapshot(t *testing.T, s ledger.Store) []record {
	t.Helper()
	var out []record
	after := ""
	for {
		ops, err := s.List(t.Context(), ledger.ListFilter{AfterID: after, Limit: ledger.MaxLimit})
		require.NoError(t, err, "List")
		for _, op := range ops {
			got, atts := mustGet(t, s, op.ID)
			out = append(out, record{Op: got, Attempts: atts, Events: mustEvents(t, s, op.ID)})
		}
		if len(ops) < ledger.MaxLimit {
			return out
		}
		after = ops[len(ops)-1].ID
	}
}

// ids returns the IDs of ops in order; nil when there are none.
func ids(ops []ledger.Operation) []string {
	var out []string
	for _, op := range ops {
		out = append(out, op.ID)
	}
	return out
}

// numberedIDs is n operation IDs, prefix-00, prefix-01 and so on, which sort
// in the order they were numbered (below 100).
func numberedIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return ids
}

package payonce_test

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// BenchmarkChargeClient is BenchmarkCharge on a ledger that lives in memory
// and allocates next to nothing (memStore): what is left above
// BenchmarkRawPOST is the client's own cost per call (keys, fingerprint,
// the HTTP stack, classification, telemetry), apart from any database's.
//
//	go test -run '^$' -bench 'ChargeClient|RawPOST/c=1' -benchmem -benchtime 2000x -count 3 .
func BenchmarkChargeClient(b *testing.B) {
	for _, c := range benchConcurrency {
		b.Run("c="+strconv.Itoa(c), func(b *testing.B) {
			warm := benchIDs("warm", 2*c)
			orders := benchIDs("order", b.N)
			store := newMemStore(len(warm) + b.N)
			fake := mocks.NewStripe(mocks.StripeOptions{})
			b.Cleanup(fake.Close)
			psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL()})
			require.NoError(b, err)
			client, err := payonce.New(payonce.Config{Provider: psp, Store: store,
				HTTPClient: &http.Client{Transport: benchTransport()}})
			require.NoError(b, err)
			ctx := b.Context()
			op := func(order string) error {
				res, err := client.Charge(ctx, charge(order, 1999))
				if err != nil {
					return err
				}
				if res.Status != payonce.ResultSucceeded || res.Attempts != 1 {
					return fmt.Errorf("charge %s: status %s after %d attempts", order, res.Status, res.Attempts)
				}
				return nil
			}
			runConcurrent(b, c, len(warm), func(i int) error { return op(warm[i]) })
			measure(b, c, func(i int) error { return op(orders[i]) })
			checkOnePaymentEach(b, fake, len(warm)+b.N)
		})
	}
}

// memStore is the part of a ledger.Store that a first Charge uses (Begin,
// then Finish), kept in memory with room reserved up front, so that it
// allocates (almost) nothing per call. It applies the ledger's own state
// machine (ledgerdriver.ApplyBegin, ledgerdriver.ApplyFinish). Any other method panics:
// the embedded interface is nil.
type memStore struct {
	ledger.Store

	mu   sync.Mutex
	idx  map[string]int
	ops  []ledger.Operation
	atts []ledger.Attempt // the latest attempt of ops[i]
}

func newMemStore(n int) *memStore {
	return &memStore{idx: make(map[string]int, n), ops: make([]ledger.Operation, 0, n), atts: make([]ledger.Attempt, 0, n)}
}

// Begin and Finish leave out the parameter checks (Validate) the real
// stores make, whose allocations are the store's share; the tests on
// SQLite and PostgreSQL check what the client passes.
func (s *memStore) Begin(_ context.Context, p ledger.BeginParams) (ledger.BeginResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, found := s.idx[p.Op.ID]
	var op ledger.Operation
	if found {
		op = s.ops[i]
	} else {
		// ledgerdriver.ApplyCreate without its defensive copies: the caller does
		// not touch References or Request after the call.
		now := ledgerdriver.UTC(p.Now)
		op = ledger.Operation{ID: p.Op.ID, Key: p.Op.Key, Provider: p.Op.Provider, Kind: p.Op.Kind,
			References: p.Op.References, Generation: p.Op.Generation, Fingerprint: p.Op.Fingerprint,
			Request: p.Op.Request, Status: ledger.StatusPending, KeyTTL: p.Op.KeyTTL, PaymentRef: p.Op.PaymentRef,
			NextCheckAt: now, CreatedAt: now, UpdatedAt: now}
	}
	res, err := ledgerdriver.ApplyBegin(op, p)
	if err != nil || !res.Claimed {
		return res, err
	}
	if !found {
		i = len(s.ops)
		s.idx[p.Op.ID] = i
		s.ops = append(s.ops, ledger.Operation{})
		s.atts = append(s.atts, ledger.Attempt{})
		res.Created = true
	}
	s.ops[i] = res.Op
	if res.Attempt != nil {
		res.Attempt.OperationID = op.ID
		s.atts[i] = *res.Attempt
	}
	return res, nil
}

func (s *memStore) Finish(_ context.Context, p ledger.FinishParams) (ledger.Operation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.idx[p.ID]
	if !ok {
		return ledger.Operation{}, ledger.ErrNotFound
	}
	var recorded *ledger.Attempt
	if p.Attempt != nil && s.atts[i].Number == p.Attempt.Number {
		recorded = &s.atts[i]
	}
	ch, err := ledgerdriver.ApplyFinish(s.ops[i], p, recorded, time.Time{})
	if err != nil {
		return ledger.Operation{}, err
	}
	s.ops[i] = ch.Op
	if ch.Attempt != nil {
		s.atts[i] = *ch.Attempt
	}
	return ch.Op, nil
}

// BenchmarkMemStore is memStore's own share of BenchmarkChargeClient.
func BenchmarkMemStore(b *testing.B) {
	ids := benchIDs("op", b.N)
	s := newMemStore(b.N)
	ctx := context.Background()
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		br, err := s.Begin(ctx, ledger.BeginParams{Op: ledger.NewOperation{ID: ids[i], Key: ids[i], Provider: "stripe",
			Kind: "charge", References: []string{"o"}, Fingerprint: "f", Request: []byte("{}"), KeyTTL: time.Hour},
			Owner: "w", Now: now, LeaseUntil: now.Add(time.Minute), StartAttempt: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Finish(ctx, ledger.FinishParams{ID: ids[i], Owner: "w", Now: now, From: ledger.StatusInFlight,
			To: ledger.StatusSucceeded, Attempt: &ledger.AttemptOutcome{Number: br.Attempt.Number, Class: ledger.OutcomeSuccess},
			ProviderRef: "pi_1", Result: []byte(`{}`)}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestKeyIsNewSHA1 checks the key derivation against its definition,
// uuid.NewSHA1(Namespace, Canonical()), on identities short and long.
func TestKeyIsNewSHA1(t *testing.T) {
	r := mrand.New(mrand.NewPCG(7, 11))
	for i := range 3000 {
		refs := make([]string, 1+r.IntN(4))
		for j := range refs {
			refs[j] = strings.Repeat(string(rune('a'+r.IntN(26))), 1+r.IntN(1+i%256))
		}
		id := payonce.Identity{Provider: "stripe", Kind: payonce.KindRefund, References: refs, Generation: r.IntN(3)}
		canonical, err := id.Canonical()
		require.NoError(t, err)
		key, err := id.Key()
		require.NoError(t, err)
		require.Equal(t, uuid.NewSHA1(uuid.MustParse(payonce.Namespace), canonical).String(), key, "identity %d", i)
		id.Generation = 0
		canonical, err = id.Canonical()
		require.NoError(t, err)
		opID, err := id.OperationID()
		require.NoError(t, err)
		require.Equal(t, uuid.NewSHA1(uuid.MustParse(payonce.Namespace), canonical).String(), opID, "identity %d", i)
	}
}

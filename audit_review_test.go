package payonce_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/stripe"
)

// lookupPoster is an adapter audited by lookups whose Lookup has a bug:
// it sends a POST (as a charge would).
type lookupPoster struct {
	*stripe.Provider
	base string
}

func (lookupPoster) AuditInfo() payonce.AuditInfo {
	return payonce.AuditInfo{ByLookup: true, Directions: "ledger → provider: each settled operation looked up"}
}

func (p lookupPoster) Lookup(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+chargePath, nil)
	if err != nil {
		return payonce.LookupResult{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return payonce.LookupResult{}, err
	}
	resp.Body.Close()
	return payonce.LookupResult{State: payonce.LookupNotFound}, nil
}

// TestAuditByLookupRefusesNonGET: a by-lookup audit's lookups take the
// audit's read-only doer too, so an adapter's Lookup that sends a POST is
// refused before it leaves, as a lister's would be.
func TestAuditByLookupRefusesNonGET(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		f := newAuditFixture(t, pg, func(sp *stripe.Provider, base string) payonce.Provider { return lookupPoster{sp, base} })
		f.charge(t, "order-a", 1000)
		f.rec.take()
		_, err := f.client.Audit(f.ctx, f.period)
		require.ErrorContains(t, err, "only GET")
		require.Empty(t, f.rec.take(), "nothing reached the provider")
	})
}

// TestAuditObjectsWithUnstorableText: the provider's metadata and ids are
// anyone's text. An object naming an "operation" that no ledger can hold
// (a NUL byte, invalid UTF-8) is unknown to the ledger, and a ref or
// status with such bytes is recorded cleaned: neither fails the audit nor
// the recording of every other finding of its batch.
func TestAuditObjectsWithUnstorableText(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		f := newAuditFixture(t, pg, nil)
		a := f.charge(t, "order-a", 1000)
		bad := objectOf(a, 999)
		bad.Ref, bad.Status = "pi_\x00bad", "succ\xffeeded"
		f.psp.set([]payonce.AuditObject{
			objectOf(a, 1000),
			bad,
			{Ref: "pi_nul", OperationID: "op\x00nul", State: payonce.AuditSucceeded, Amount: 1, Currency: "USD", Created: a.CreatedAt},
			{Ref: "pi_utf", OperationID: "op\xff", State: payonce.AuditSucceeded, Amount: 1, Currency: "USD", Created: a.CreatedAt},
		})
		rep := f.audit(t, func(p *payonce.AuditParams) { p.DryRun = false })
		require.Equal(t, map[ledger.FindingClass]int{ledger.FindingDuplicated: 1, ledger.FindingContradicted: 1, ledger.FindingUnknownToLedger: 2},
			classes(rep), "%+v", rep.Differences)
		require.Len(t, f.store.all(), 4)
		// The real store accepts them.
		require.NoError(t, f.store.Store.RecordFindings(f.ctx, f.store.all(), f.clock.Now()))
	})
}

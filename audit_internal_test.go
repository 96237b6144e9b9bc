package payonce

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

var auditT0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestClassify(t *testing.T) {
	id := Identity{Provider: "stripe", Kind: KindCharge, References: []string{"order-1"}}
	opID, err := id.Key()
	require.NoError(t, err)
	id.Generation = 1
	key1, err := id.Key()
	require.NoError(t, err)
	op := func(status ledger.Status, mod ...func(*auditOp)) *auditOp {
		o := &auditOp{ID: opID, Kind: "charge", Status: status, Amount: 1000, Currency: "USD", ProviderRef: "pi_1", Created: auditT0}
		for _, m := range mod {
			m(o)
		}
		return o
	}
	gen1 := func(o *auditOp) { o.Keys = []string{key1} }
	obj := func(ref string, s AuditState, mod ...func(*AuditObject)) AuditObject {
		o := AuditObject{Ref: ref, OperationID: opID, Key: opID, Kind: KindCharge, State: s, Status: string(s), Amount: 1000, Currency: "USD", Created: auditT0}
		for _, m := range mod {
			m(&o)
		}
		return o
	}
	withKey := func(k string) func(*AuditObject) { return func(o *AuditObject) { o.Key = k } }
	type want map[ledger.FindingClass]int
	cases := []struct {
		name      string
		g         auditGroup
		want      want
		wantState AuditState
	}{
		{"consistent", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditSucceeded)}, Listed: true, InPeriod: true}, want{}, ""},
		{"no key on the object is no evidence", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditSucceeded, withKey(""))}}, want{}, ""},
		{"unknown, succeeded", auditGroup{Objects: []AuditObject{obj("pi_1", AuditSucceeded)}}, want{ledger.FindingUnknownToLedger: 1}, AuditSucceeded},
		{"unknown, processing", auditGroup{Objects: []AuditObject{obj("pi_1", AuditProcessing)}}, want{ledger.FindingUnknownToLedger: 1}, AuditProcessing},
		{"unknown, reversed", auditGroup{Objects: []AuditObject{obj("pi_1", AuditReversed)}}, want{ledger.FindingUnknownToLedger: 1}, AuditReversed},
		{"unknown, two objects: one finding", auditGroup{Objects: []AuditObject{obj("pi_1", AuditSucceeded), obj("pi_2", AuditSucceeded)}}, want{ledger.FindingUnknownToLedger: 1}, AuditSucceeded},
		{"unknown, failed", auditGroup{Objects: []AuditObject{obj("pi_1", AuditFailed)}}, want{}, ""},
		{"unknown, canceled", auditGroup{Objects: []AuditObject{obj("pi_1", AuditCanceled)}}, want{}, ""},
		{"another key", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditSucceeded, withKey("k-other"))}, Listed: true, InPeriod: true},
			want{ledger.FindingContradicted: 1}, AuditSucceeded},
		{"generation 1's key is the operation's", auditGroup{Op: op(ledger.StatusSucceeded, gen1), Objects: []AuditObject{obj("pi_1", AuditSucceeded, withKey(key1))}}, want{}, ""},
		{"generation 1's key on a generation 0 operation", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditSucceeded, withKey(key1))}},
			want{ledger.FindingContradicted: 1}, AuditSucceeded},
		{"duplicate under an earlier generation", auditGroup{Op: op(ledger.StatusSucceeded, gen1), Objects: []AuditObject{obj("pi_0", AuditSucceeded), obj("pi_1", AuditSucceeded, withKey(key1))}},
			want{ledger.FindingDuplicated: 1}, ""},
		{"duplicate: an authorization voided counts", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_0", AuditCanceled), obj("pi_1", AuditSucceeded)}},
			want{ledger.FindingDuplicated: 1}, ""},
		{"a declined first try is no duplicate", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_0", AuditFailed), obj("pi_1", AuditSucceeded)}}, want{}, ""},
		{"amount", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditSucceeded, func(o *AuditObject) { o.Amount = 10 })}},
			want{ledger.FindingContradicted: 1}, AuditSucceeded},
		{"partially captured: the captured amount shown", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditSucceeded, func(o *AuditObject) { o.Amount = 600 })},
			Captured: map[string][]int64{"pi_1": {600}}}, want{}, ""},
		{"partially captured: another amount shown", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditSucceeded, func(o *AuditObject) { o.Amount = 500 })},
			Captured: map[string][]int64{"pi_1": {600}}}, want{ledger.FindingContradicted: 1}, AuditSucceeded},
		{"a capture of another object explains nothing", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditSucceeded, func(o *AuditObject) { o.Amount = 600 })},
			Captured: map[string][]int64{"pi_2": {600}}}, want{ledger.FindingContradicted: 1}, AuditSucceeded},
		{"more than asked is never a capture", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditSucceeded, func(o *AuditObject) { o.Amount = 1200 })},
			Captured: map[string][]int64{"pi_1": {1200}}}, want{ledger.FindingContradicted: 1}, AuditSucceeded},
		{"currency", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditSucceeded, func(o *AuditObject) { o.Currency = "EUR" })}},
			want{ledger.FindingContradicted: 1}, AuditSucceeded},
		{"currency case", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditSucceeded, func(o *AuditObject) { o.Currency = "usd" })}}, want{}, ""},
		{"full refund: no amount asked", auditGroup{Op: op(ledger.StatusSucceeded, func(o *auditOp) { o.Kind, o.Amount, o.Currency = "refund", 0, "" }),
			Objects: []AuditObject{obj("re_1", AuditSucceeded, func(o *AuditObject) { o.Amount = 4321 })}}, want{}, ""},
		{"tombstone keeps no amount", auditGroup{Op: op(ledger.StatusSucceeded, func(o *auditOp) { o.Tombstone, o.Amount, o.Currency = true, 0, "" }),
			Objects: []AuditObject{obj("pi_1", AuditSucceeded)}}, want{}, ""},
		{"failed tombstone, provider succeeded", auditGroup{Op: op(ledger.StatusFailed, func(o *auditOp) { o.Tombstone = true }), Objects: []AuditObject{obj("pi_1", AuditSucceeded)}},
			want{ledger.FindingStatusDiffers: 1}, AuditSucceeded},
		{"ledger failed, provider succeeded", auditGroup{Op: op(ledger.StatusFailed), Objects: []AuditObject{obj("pi_1", AuditSucceeded)}}, want{ledger.FindingStatusDiffers: 1}, AuditSucceeded},
		{"ledger in review, provider succeeded", auditGroup{Op: op(ledger.StatusManualReview), Objects: []AuditObject{obj("pi_1", AuditSucceeded)}}, want{ledger.FindingStatusDiffers: 1}, AuditSucceeded},
		{"ledger failed, provider failed", auditGroup{Op: op(ledger.StatusFailed), Objects: []AuditObject{obj("pi_1", AuditFailed)}}, want{}, ""},
		{"ledger succeeded, provider failed", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditFailed)}}, want{ledger.FindingStatusDiffers: 1}, AuditFailed},
		{"ledger failed, provider reversed", auditGroup{Op: op(ledger.StatusFailed), Objects: []AuditObject{obj("pi_1", AuditReversed)}}, want{ledger.FindingStatusDiffers: 1}, AuditReversed},
		{"ledger in review, provider reversed", auditGroup{Op: op(ledger.StatusManualReview), Objects: []AuditObject{obj("pi_1", AuditReversed)}}, want{}, ""},
		{"ledger succeeded, provider reversed", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditReversed)}}, want{ledger.FindingStatusDiffers: 1}, AuditReversed},
		{"ledger succeeded, provider canceled", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditCanceled)}}, want{ledger.FindingStatusDiffers: 1}, AuditCanceled},
		{"canceled by a recorded cancel", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditCanceled)}, CancelRecorded: true}, want{}, ""},
		{"ledger succeeded, provider processing", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_1", AuditProcessing)}}, want{}, ""},
		{"ledger unknown: the reconciler's", auditGroup{Op: op(ledger.StatusUnknown), Objects: []AuditObject{obj("pi_1", AuditFailed)}}, want{}, ""},
		{"ledger pending: the reconciler's", auditGroup{Op: op(ledger.StatusPending), Objects: []AuditObject{obj("pi_1", AuditSucceeded)}}, want{}, ""},
		{"ledger in flight: the reconciler's", auditGroup{Op: op(ledger.StatusInFlight), Listed: true, InPeriod: true}, want{}, ""},
		{"missing", auditGroup{Op: op(ledger.StatusSucceeded), Listed: true, InPeriod: true}, want{ledger.FindingMissingAtProvider: 1}, ""},
		{"missing, kind not listed", auditGroup{Op: op(ledger.StatusSucceeded), InPeriod: true}, want{}, ""},
		{"missing, created outside the period", auditGroup{Op: op(ledger.StatusSucceeded), Listed: true}, want{}, ""},
		{"missing, but failed", auditGroup{Op: op(ledger.StatusFailed), Listed: true, InPeriod: true}, want{}, ""},
		{"only another key's object: not missing, contradicted", auditGroup{Op: op(ledger.StatusSucceeded), Objects: []AuditObject{obj("pi_x", AuditSucceeded, withKey("k-other"))}, Listed: true, InPeriod: true},
			want{ledger.FindingContradicted: 1}, AuditSucceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.g.ID = opID
			got := classify(tc.g, "stripe")
			counts := want{}
			for _, d := range got {
				counts[d.Class]++
				require.NotEmpty(t, d.Detail)
				require.Equal(t, opID, d.OperationID)
			}
			require.Equal(t, tc.want, counts, "%+v", got)
			if tc.wantState != "" {
				require.Equal(t, tc.wantState, got[0].ProviderState)
				require.NotEmpty(t, got[0].ProviderRef)
			}
		})
	}
}

func TestClassifyLookup(t *testing.T) {
	op := func(s ledger.Status) ledger.Operation {
		return ledger.Operation{ID: "op-1", Kind: "charge", Status: s, ProviderRef: "pay_1"}
	}
	cases := []struct {
		name string
		op   ledger.Operation
		lr   LookupResult
		lag  bool
		want ledger.FindingClass
	}{
		{"consistent", op(ledger.StatusSucceeded), LookupResult{State: LookupSucceeded, ProviderRef: "pay_1"}, true, ""},
		{"multiple", op(ledger.StatusSucceeded), LookupResult{State: LookupMultiple, Refs: []string{"pay_1", "pay_2"}}, true, ledger.FindingDuplicated},
		{"contradiction", op(ledger.StatusSucceeded), LookupResult{State: LookupSucceeded, Contradiction: "amount 5, not 10"}, true, ledger.FindingContradicted},
		{"succeeded vs failed", op(ledger.StatusFailed), LookupResult{State: LookupSucceeded}, true, ledger.FindingStatusDiffers},
		{"succeeded vs review", op(ledger.StatusManualReview), LookupResult{State: LookupSucceeded}, true, ledger.FindingStatusDiffers},
		{"failed vs succeeded", op(ledger.StatusSucceeded), LookupResult{State: LookupFailed}, true, ledger.FindingStatusDiffers},
		{"failed vs failed", op(ledger.StatusFailed), LookupResult{State: LookupFailed}, true, ""},
		{"not found, lag passed", op(ledger.StatusSucceeded), LookupResult{State: LookupNotFound, Lag: time.Minute}, true, ledger.FindingMissingAtProvider},
		{"not found within the lag", op(ledger.StatusSucceeded), LookupResult{State: LookupNotFound, Lag: time.Minute}, false, ""},
		{"not found, failed", op(ledger.StatusFailed), LookupResult{State: LookupNotFound}, true, ""},
		{"processing", op(ledger.StatusSucceeded), LookupResult{State: LookupProcessing}, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := classifyLookup(tc.op, tc.lr, tc.lag, "checkout")
			if tc.want == "" {
				require.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			require.Equal(t, tc.want, got[0].Class)
			require.Equal(t, "op-1", got[0].OperationID)
			require.NotEmpty(t, got[0].Detail)
		})
	}
}

func TestAuditCodecRoundTrip(t *testing.T) {
	o := AuditObject{Ref: "pi_1", OperationID: "op-é", Key: "k", Kind: KindRefund, State: AuditReversed, Status: "charge.dispute",
		Amount: -5, Currency: "EUR", Created: auditT0.Add(123), PaymentRef: "pi_0"}
	b, err := encodeAuditObject(o)
	require.NoError(t, err)
	got, err := decodeAuditObject(b)
	require.NoError(t, err)
	require.Equal(t, o, got)
	_, err = decodeAuditObject(b[:len(b)-3])
	require.Error(t, err, "a truncated record is refused")

	r := auditOp{ID: "op-1", Kind: "charge", Status: ledger.StatusSucceeded, Amount: 1 << 40, Currency: "JPY", ProviderRef: "p",
		PaymentRef: "q", Keys: []string{"k1", "k2"}, Created: auditT0, Tombstone: true}
	b, err = encodeAuditOp(r)
	require.NoError(t, err)
	gotOp, err := decodeAuditOp(b)
	require.NoError(t, err)
	require.Equal(t, r, gotOp)
	_, err = decodeAuditOp(b[:5])
	require.Error(t, err)
	// The zero time survives as zero.
	b, _ = encodeAuditObject(AuditObject{OperationID: "x"})
	got, err = decodeAuditObject(b)
	require.NoError(t, err)
	require.True(t, got.Created.IsZero())
}

func TestLatestPerRef(t *testing.T) {
	row := func(ref string, s AuditState, sec int) AuditObject {
		return AuditObject{OperationID: "op", Ref: ref, State: s, Created: auditT0.Add(time.Duration(sec) * time.Second)}
	}
	objs := []AuditObject{row("psp_2", AuditReversed, 9), row("psp_1", AuditSucceeded, 1), row("psp_1", AuditReversed, 5),
		row("psp_1", AuditSucceeded, 7)}
	slices.SortFunc(objs, compareAuditObjects)
	got := latestPerRef(objs)
	require.Len(t, got, 2)
	require.Equal(t, "psp_1", got[0].Ref)
	require.Equal(t, AuditSucceeded, got[0].State, "the chargeback was reversed: the latest row")
	require.Equal(t, "psp_2", got[1].Ref)
	// One payment charged back is one object that differs, not a duplicate.
	op := &auditOp{ID: "op", Kind: "charge", Status: ledger.StatusSucceeded}
	charged := []AuditObject{row("psp_1", AuditSucceeded, 1), row("psp_1", AuditReversed, 5)}
	slices.SortFunc(charged, compareAuditObjects)
	d := classify(auditGroup{ID: "op", Op: op, Objects: latestPerRef(charged)}, "adyen")
	require.Len(t, d, 1)
	require.Equal(t, ledger.FindingStatusDiffers, d[0].Class)
	require.Equal(t, AuditReversed, d[0].ProviderState)
}

// TestClassifyDetailNamesAFewRefs: an operation with many objects gives a
// detail of bounded size, naming how many more there are.
func TestClassifyDetailNamesAFewRefs(t *testing.T) {
	op := &auditOp{ID: "op-1", Kind: "charge", Status: ledger.StatusSucceeded, Amount: 1000, Currency: "USD", Created: auditT0}
	var objs []AuditObject
	for i := range 5000 {
		objs = append(objs, AuditObject{Ref: fmt.Sprintf("pi_%06d", i), OperationID: "op-1", Kind: KindCharge, State: AuditSucceeded, Amount: 1000, Currency: "USD", Created: auditT0})
	}
	for _, g := range []auditGroup{{ID: "op-1", Op: op, Objects: objs}, {ID: "op-1", Objects: objs}} {
		ds := classify(g, "stripe")
		require.Len(t, ds, 1)
		require.Less(t, len(ds[0].Detail), 1000, ds[0].Detail)
		require.Contains(t, ds[0].Detail, "and 4980 more")
	}
}

// TestClassifyTombstoneKeepsItsGenerations: a tombstone keeps the
// identity and generation of its operation, so the objects of each of its
// key generations are its own (not contradicted), and another key is not.
func TestClassifyTombstoneKeepsItsGenerations(t *testing.T) {
	id := Identity{Provider: "stripe", Kind: KindCharge, References: []string{"order-t"}}
	opID, err := id.OperationID()
	require.NoError(t, err)
	id.Generation = 1
	key1, err := id.Key()
	require.NoError(t, err)
	tomb := ledger.Operation{ID: opID, Key: key1, Provider: "stripe", Kind: "charge", References: []string{"order-t"}, Generation: 1,
		Status: ledger.StatusSucceeded, ProviderRef: "pi_1", CreatedAt: auditT0, Tombstone: true}
	r, err := auditOpOf(tomb)
	require.NoError(t, err)
	obj := func(ref, key string, s AuditState) AuditObject {
		return AuditObject{Ref: ref, OperationID: opID, Key: key, Kind: KindCharge, State: s, Amount: 1000, Currency: "USD", Created: auditT0}
	}
	g := auditGroup{ID: opID, Op: &r, Objects: []AuditObject{obj("pi_0", opID, AuditFailed), obj("pi_1", key1, AuditSucceeded)}, Listed: true, InPeriod: true}
	require.Empty(t, classify(g, "stripe"))
	g.Objects = append(g.Objects, obj("pi_2", "k-other", AuditSucceeded))
	ds := classify(g, "stripe")
	require.Len(t, ds, 1)
	require.Equal(t, ledger.FindingContradicted, ds[0].Class)
	require.Equal(t, "pi_2", ds[0].ProviderRef)
}

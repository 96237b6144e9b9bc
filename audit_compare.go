package payonce

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lanrat/extsort"
	"golang.org/x/sync/errgroup"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// The audit's engine. Both sides of the comparison are streamed, never
// held: the provider's objects (AuditLister.ListObjects over the period
// widened by AuditInfo.Margin) and the ledger's operations of the period
// (Store.List pages) are each written to an external sort (extsort, runs
// of auditChunk records spilled to AuditParams.TempDir) keyed by operation
// id in Go's byte order, and the two sorted streams are merge-joined into
// groups: one operation id, its ledger record (or none) and the objects
// that name it. classify judges a group; it is a pure function. Memory is
// bounded by the sort's chunks and one group, whatever the period holds.
//
// Why sort in Go rather than ask the database for ORDER BY id: a
// PostgreSQL collation (en_US.UTF-8) orders "a-b" and "ab" otherwise than
// bytes do, and a merge-join over two differently ordered streams pairs
// nothing with nothing and reports every operation as missing. Store.List
// pages are still keyset-paged by AfterID: the store compares and orders
// by one collation, which is all paging needs.

const (
	// auditChunk is how many records one sorted run holds in memory. A
	// record is a few hundred bytes: two sorters, each with a chunk being
	// filled, one being sorted and up to two queued for the disk, stay
	// near 50 MB at the worst.
	auditChunk = 20_000
	// auditPage is the ledger page size (Store.List).
	auditPage = 1000
	// auditFindingBatch is how many findings one RecordFindings call
	// (one transaction) records.
	auditFindingBatch = 500
)

// auditRun is one Client.Audit in progress.
type auditRun struct {
	c        *Client
	p        AuditParams
	info     AuditInfo
	provider string
	rep      AuditReport
	// findings waits for the next RecordFindings batch.
	findings []ledger.NewFinding
	// unattributed holds the unattributed objects to list (ListUnattributed),
	// at most MaxListed; they are listed after the differences (listDone)
	// so that an account's many payments made elsewhere, read first, never
	// crowd a difference out of the list. moreUnattributed: some did not fit.
	unattributed     []AuditDifference
	moreUnattributed bool
}

// auditOp is the compact record of a ledger operation the comparison
// sorts: what classify needs, nothing more (no request, no result).
type auditOp struct {
	ID          string
	Kind        string
	Status      ledger.Status
	Amount      int64
	Currency    string
	ProviderRef string
	PaymentRef  string
	// Keys are the keys of the operation's generations 1..Generation (its
	// generation 0 key is its ID): an object may carry any of them.
	Keys      []string
	Created   time.Time
	Tombstone bool
}

// auditOpOf is op as the comparison records it.
func auditOpOf(op ledger.Operation) (auditOp, error) {
	r := auditOp{ID: op.ID, Kind: op.Kind, Status: op.Status, ProviderRef: op.ProviderRef, PaymentRef: op.PaymentRef,
		Created: op.CreatedAt, Tombstone: op.Tombstone}
	// A tombstone keeps no request: its amount is unknown here, and
	// classify compares none (RequestAmount of nothing is 0, "").
	r.Amount, r.Currency = ledgerdriver.RequestAmount(op.Request)
	if op.Generation > 0 {
		id := Identity{Provider: op.Provider, Kind: Kind(op.Kind), References: op.References}
		for g := 1; g <= op.Generation; g++ {
			id.Generation = g
			k, err := id.Key()
			if err != nil {
				return r, fmt.Errorf("payonce: the recorded identity of %s is invalid: %w", op.ID, err)
			}
			r.Keys = append(r.Keys, k)
		}
	}
	return r, nil
}

// hasKey reports whether key is one of the operation's keys, of any
// generation (lookupQuery's EarlierKeys and the current one).
func (o auditOp) hasKey(key string) bool {
	return key == o.ID || slices.Contains(o.Keys, key)
}

// auditGroup is one operation id of the merge-join.
type auditGroup struct {
	ID string
	// Op is the ledger's record; nil when the ledger has none (nor a
	// tombstone).
	Op      *auditOp
	Objects []AuditObject
	// Listed: the operation's kind is among AuditInfo.ListedKinds, so
	// ListObjects would return its object.
	Listed bool
	// InPeriod: the operation was created in the audited period.
	InPeriod bool
	// CancelRecorded: the ledger holds a succeeded cancel operation of the
	// payment a canceled object is (set only when classify would ask).
	CancelRecorded bool
	// Captured holds, by the ref of a charge's object that shows less than
	// the charge asked for, the amounts of the succeeded partial captures
	// the ledger recorded of that payment (set only when classify would
	// ask): YooKassa shows a partially captured payment with the captured
	// amount, and that is what the capture did, not a contradiction.
	Captured map[string][]int64
}

// tookEffect reports whether an object moved (or holds) money: what makes
// an object a duplicate or unknown to the ledger. A canceled authorization
// held the payer's funds until it was voided, so it counts for duplicates.
func tookEffect(s AuditState, countCanceled bool) bool {
	switch s {
	case AuditSucceeded, AuditProcessing, AuditReversed:
		return true
	case AuditCanceled:
		return countCanceled
	}
	return false
}

// classify judges one group of the merge-join. It reads no clock and no
// ledger: everything it needs is in g (the caller looked up the tombstone
// and the cancel operation before).
func classify(g auditGroup, provider string) []AuditDifference {
	if g.Op == nil {
		return classifyUnknown(g)
	}
	op := *g.Op
	var out []AuditDifference
	diff := func(class ledger.FindingClass, o *AuditObject, detail string) {
		d := AuditDifference{Class: class, OperationID: op.ID, Kind: Kind(op.Kind), LedgerStatus: op.Status, Detail: detail}
		if o != nil {
			d.ProviderRef, d.ProviderState = o.Ref, o.State
		}
		out = append(out, d)
	}
	// An object whose key is none of the operation's was not sent by any
	// of its generations: another request carries this operation's id (a
	// bug, or metadata copied by hand). It is not this operation's object,
	// so it is judged for nothing else.
	var own []AuditObject
	for i := range g.Objects {
		o := &g.Objects[i]
		if o.Key != "" && !op.hasKey(o.Key) {
			diff(ledger.FindingContradicted, o, fmt.Sprintf("%s %s carries key %s, none of the operation's %d key(s)", provider, o.Ref, o.Key, 1+len(op.Keys)))
			continue
		}
		own = append(own, *o)
	}
	if len(own) == 0 {
		// Only what the provider should list and the period holds: an
		// operation of another kind (a capture has no object of its own)
		// or created outside the period is not expected in this listing.
		// Edge: an operation of the period whose only object the provider
		// created after To+Margin (an operator's resend days later) is
		// reported missing by this period's audit; the later period's audit
		// reads the object, finds the operation with Store.Get (the object
		// lies inside that period, so it is not skipped) and judges them
		// consistent, but the earlier finding stays open until a person
		// acknowledges it. A wider Margin avoids it when resends are late.
		if op.Status == ledger.StatusSucceeded && g.Listed && g.InPeriod && len(g.Objects) == 0 {
			diff(ledger.FindingMissingAtProvider, nil, fmt.Sprintf("ledger: %s succeeded (ref %s); %s lists no object for it", op.Kind, op.ProviderRef, provider))
		}
		return out
	}
	// Every object that took effect beyond the first is money moved twice.
	// Objects of earlier key generations count: a resend under a new key
	// after the first key's object was missed is exactly that duplicate.
	var effective []string
	for _, o := range own {
		if tookEffect(o.State, true) {
			effective = append(effective, o.Ref)
		}
	}
	if len(effective) > 1 {
		d := AuditDifference{Class: ledger.FindingDuplicated, OperationID: op.ID, Kind: Kind(op.Kind), LedgerStatus: op.Status,
			Detail: fmt.Sprintf("%s holds %d objects that took effect: %s", provider, len(effective), joinRefs(effective))}
		out = append(out, d)
	}
	// Amount and currency: the object must be what the operation asked for.
	// A request without an amount (a full refund, a cancel) says nothing
	// about the object's; a tombstone kept none.
	for i := range own {
		o := &own[i]
		var what []string
		if op.Amount != 0 && o.Amount != op.Amount && !(o.Amount < op.Amount && slices.Contains(g.Captured[o.Ref], o.Amount)) {
			what = append(what, fmt.Sprintf("amount %d, ledger %d", o.Amount, op.Amount))
		}
		if op.Currency != "" && o.Currency != "" && !strings.EqualFold(o.Currency, op.Currency) {
			what = append(what, fmt.Sprintf("currency %s, ledger %s", strings.ToUpper(o.Currency), strings.ToUpper(op.Currency)))
		}
		if len(what) > 0 {
			diff(ledger.FindingContradicted, o, fmt.Sprintf("%s %s: %s", provider, o.Ref, strings.Join(what, "; ")))
		}
	}
	// Outcome. Pending, in_flight and unknown are no difference: the
	// reconciler is still settling them (a lookup, a resend), and the
	// audit must not race it.
	switch op.Status {
	case ledger.StatusFailed, ledger.StatusManualReview:
		// The ledger says nothing moved (or a person must decide) while
		// the provider says it did: money the service does not know it has.
		// A reversed object moved money too (and took it back, fees kept):
		// against "failed" that differs; an operation in review is already
		// before a person (a dispute's webhook put it there).
		for i := range own {
			if own[i].State == AuditSucceeded || (op.Status == ledger.StatusFailed && own[i].State == AuditReversed) {
				diff(ledger.FindingStatusDiffers, &own[i], fmt.Sprintf("ledger: %s %s; %s %s: %s", op.Kind, op.Status, provider, own[i].Ref, own[i].Status))
			}
		}
	case ledger.StatusSucceeded:
		// The ledger says it moved; the provider must hold an object that
		// did. A canceled authorization is what a recorded cancel does, so
		// it differs only without one.
		for _, o := range own {
			if o.State == AuditSucceeded || o.State == AuditProcessing || (o.State == AuditCanceled && g.CancelRecorded) {
				return out
			}
		}
		last := own[len(own)-1]
		diff(ledger.FindingStatusDiffers, &last, fmt.Sprintf("ledger: %s succeeded; %s %s: %s (%s)", op.Kind, provider, last.Ref, last.State, last.Status))
	}
	return out
}

// classifyUnknown judges objects that name an operation the ledger has no
// record (nor tombstone) of: any that took effect is money moved that
// the service never recorded. One that failed moved nothing.
func classifyUnknown(g auditGroup) []AuditDifference {
	var refs []string
	var first *AuditObject
	for i := range g.Objects {
		if tookEffect(g.Objects[i].State, false) {
			if first == nil {
				first = &g.Objects[i]
			}
			refs = append(refs, g.Objects[i].Ref+" ("+string(g.Objects[i].State)+")")
		}
	}
	if first == nil {
		return nil
	}
	return []AuditDifference{{Class: ledger.FindingUnknownToLedger, OperationID: g.ID, ProviderRef: first.Ref, Kind: first.Kind,
		ProviderState: first.State, Detail: "the ledger has no record of the operation; the provider holds " + joinRefs(refs)}}
}

// maxDetailRefs is how many of a group's refs a difference's detail names.
const maxDetailRefs = 20

// joinRefs names refs for a detail, at most maxDetailRefs of them: an
// operation with thousands of objects (a loop resending it) must not make
// a detail (kept in Differences, handed to OnDifference) of their size.
func joinRefs(refs []string) string {
	if len(refs) <= maxDetailRefs {
		return strings.Join(refs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(refs[:maxDetailRefs], ", "), len(refs)-maxDetailRefs)
}

// inPeriod reports whether t lies in the audited period.
func (a *auditRun) inPeriod(t time.Time) bool {
	return !t.Before(a.p.From) && t.Before(a.p.To)
}

// compare is the audit of a provider that lists its objects.
func (a *auditRun) compare(ctx context.Context, lister AuditLister) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dir := a.p.TempDir
	if dir == "" {
		dir = os.TempDir()
	}
	// One sort worker each, no queued chunk: the audit is I/O bound (the
	// provider's pages, the ledger's), and every extra chunk in flight is
	// auditChunk records of heap.
	cfg := &extsort.Config{ChunkSize: auditChunk, NumWorkers: 1, ChanBuffSize: 0, SortedChanBuffSize: 256, TempFilesDir: dir}
	objIn := make(chan AuditObject, 256)
	opIn := make(chan auditOp, 256)
	objSorter, objOut, objErr := extsort.Generic(objIn, decodeAuditObject, encodeAuditObject, compareAuditObjects, cfg)
	opSorter, opOut, opErr := extsort.Generic(opIn, decodeAuditOp, encodeAuditOp, func(x, y auditOp) int { return strings.Compare(x.ID, y.ID) }, cfg)
	go objSorter.Sort(ctx)
	go opSorter.Sort(ctx)
	defer func() {
		// On an early return the sorters stop with ctx; drain what they
		// still hand out so that none blocks on a full channel.
		cancel()
		go func() {
			for range objOut {
			}
		}()
		go func() {
			for range opOut {
			}
		}()
	}()

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(objIn)
		q := AuditQuery{From: a.p.From.Add(-a.info.Margin), To: a.p.To.Add(a.info.Margin), Report: a.p.Report}
		err := lister.ListObjects(gctx, auditDoer{c: a.c}, q, func(o AuditObject) error {
			cleanAuditObject(&o)
			if !o.Created.IsZero() && (o.Created.Before(q.From) || !o.Created.Before(q.To)) {
				// Outside what was asked (a lister that lists by another
				// date): another period's audit judges it.
				return nil
			}
			a.rep.Objects++
			if o.OperationID == "" {
				// Not payonce's (a payment made in the dashboard, another
				// integration): nothing to join it to, so it is counted, not
				// sorted.
				a.rep.Unattributed++
				if a.p.ListUnattributed {
					a.emit(ctx, AuditDifference{ProviderRef: o.Ref, Kind: o.Kind, ProviderState: o.State,
						Detail: fmt.Sprintf("%s %s carries no payonce operation id: %s %d %s created %s", a.provider, o.Ref, o.Status, o.Amount, o.Currency, o.Created.UTC().Format(time.RFC3339))})
				}
				return nil
			}
			o.Currency = strings.ToUpper(o.Currency)
			select {
			case objIn <- o:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
		if err != nil {
			return fmt.Errorf("payonce: listing %s's objects: %w", a.provider, err)
		}
		return nil
	})
	g.Go(func() error {
		defer close(opIn)
		return a.eachLedgerOp(gctx, func(op ledger.Operation) error {
			r, err := auditOpOf(op)
			if err != nil {
				return err
			}
			select {
			case opIn <- r:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
	})
	// The sorted streams are read only once both sides were read whole:
	// a listing that failed halfway must not be compared (every operation
	// after the failure would look missing).
	if err := g.Wait(); err != nil {
		return err
	}
	if err := a.mergeJoin(ctx, objOut, opOut); err != nil {
		return err
	}
	if err := <-objErr; err != nil {
		return fmt.Errorf("payonce: sorting %s's objects: %w", a.provider, err)
	}
	if err := <-opErr; err != nil {
		return fmt.Errorf("payonce: sorting the ledger's operations: %w", err)
	}
	return ctx.Err()
}

// eachLedgerOp calls fn for each operation of the provider created in the
// period, page by page.
func (a *auditRun) eachLedgerOp(ctx context.Context, fn func(ledger.Operation) error) error {
	after := ""
	for {
		ops, err := a.c.cfg.Store.List(ctx, ledger.ListFilter{Provider: a.provider, CreatedFrom: a.p.From, CreatedBefore: a.p.To,
			AfterID: after, Limit: auditPage})
		if err != nil {
			return fmt.Errorf("payonce: listing the ledger's operations of %s: %w", a.provider, err)
		}
		for _, op := range ops {
			// The store filters by creation time; checked again so that a
			// store that does not filter cannot widen the period.
			if !a.inPeriod(op.CreatedAt) {
				continue
			}
			a.rep.Operations++
			if err := fn(op); err != nil {
				return err
			}
		}
		if len(ops) < auditPage {
			return nil
		}
		after = ops[len(ops)-1].ID
	}
}

// mergeJoin walks the two sorted streams in step and judges each
// operation id once.
func (a *auditRun) mergeJoin(ctx context.Context, objOut <-chan AuditObject, opOut <-chan auditOp) error {
	o, oOK := <-objOut
	l, lOK := <-opOut
	prev := ""
	var objs []AuditObject
	for oOK || lOK {
		var id string
		switch {
		case !oOK:
			id = l.ID
		case !lOK:
			id = o.OperationID
		default:
			id = min(l.ID, o.OperationID)
		}
		if prev != "" && id <= prev {
			// A merge-join over an unsorted stream pairs wrong records:
			// better no audit than a wrong one.
			return fmt.Errorf("payonce: audit streams out of order: %q after %q", id, prev)
		}
		prev = id
		g := auditGroup{ID: id}
		if lOK && l.ID == id {
			op := l
			g.Op = &op
			l, lOK = <-opOut
		}
		objs = objs[:0]
		for oOK && o.OperationID == id {
			objs = append(objs, o)
			o, oOK = <-objOut
		}
		g.Objects = latestPerRef(objs)
		if err := a.judge(ctx, g); err != nil {
			return err
		}
	}
	return nil
}

// judge completes a group from the ledger where classify needs it and
// emits its differences.
func (a *auditRun) judge(ctx context.Context, g auditGroup) error {
	if g.Op == nil {
		// Objects of an operation not created in the period: the ledger
		// may still hold it (created before From, its object within the
		// margin) or its tombstone (Cleanup removed it; a tombstone is a
		// record: the operation existed and its outcome is known).
		op, _, err := a.c.cfg.Store.Get(ctx, g.ID)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
		case err != nil:
			return fmt.Errorf("payonce: reading operation %s: %w", g.ID, err)
		default:
			if !a.inPeriod(op.CreatedAt) && !slices.ContainsFunc(g.Objects, func(o AuditObject) bool { return a.inPeriod(o.Created) }) {
				// Both sides lie outside the period: only the margin brought
				// it in, and the neighbouring period's audit judges it.
				return nil
			}
			r, err := auditOpOf(op)
			if err != nil {
				return err
			}
			g.Op = &r
		}
	}
	if g.Op != nil {
		g.InPeriod = a.inPeriod(g.Op.Created)
		g.Listed = slices.Contains(a.info.ListedKinds, Kind(g.Op.Kind))
		if g.Op.Status == ledger.StatusSucceeded && slices.ContainsFunc(g.Objects, func(o AuditObject) bool { return o.State == AuditCanceled }) {
			var err error
			if g.CancelRecorded, err = a.cancelRecorded(ctx, g); err != nil {
				return err
			}
		}
		if err := a.capturesRecorded(ctx, &g); err != nil {
			return err
		}
	}
	for _, d := range classify(g, a.provider) {
		if err := a.emit(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// cancelRecorded reports whether the ledger holds a succeeded cancel of
// the payment a canceled object of g is. A cancel operation records the
// payment's id as its provider reference (Stripe and YooKassa cancel the
// payment object itself) or as its PaymentRef (Adyen's cancel is a
// modification with its own reference); List filters by the first, and
// the second is checked on what it returns.
func (a *auditRun) cancelRecorded(ctx context.Context, g auditGroup) (bool, error) {
	for _, o := range g.Objects {
		if o.State != AuditCanceled {
			continue
		}
		for _, ref := range []string{o.Ref, g.Op.ProviderRef} {
			if ref == "" {
				continue
			}
			ops, err := a.c.cfg.Store.List(ctx, ledger.ListFilter{Provider: a.provider, Kind: string(KindCancel), ProviderRef: ref,
				Status: ledger.StatusSucceeded, Limit: 10})
			if err != nil {
				return false, fmt.Errorf("payonce: listing the cancels of %s: %w", ref, err)
			}
			if len(ops) > 0 {
				return true, nil
			}
		}
	}
	return false, nil
}

// capturesRecorded fills g.Captured for a charge whose objects show less
// than it asked for: the amounts of the succeeded captures the ledger holds
// of each such object (a capture records the payment's id as its provider
// reference, as a cancel does; its PaymentRef, when recorded, must be the
// payment too). A capture without an amount took everything and explains
// nothing less.
func (a *auditRun) capturesRecorded(ctx context.Context, g *auditGroup) error {
	if Kind(g.Op.Kind) != KindCharge || g.Op.Amount == 0 {
		return nil
	}
	for _, o := range g.Objects {
		if o.Ref == "" || o.Amount <= 0 || o.Amount >= g.Op.Amount || g.Captured[o.Ref] != nil {
			continue
		}
		ops, err := a.c.cfg.Store.List(ctx, ledger.ListFilter{Provider: a.provider, Kind: string(KindCapture), ProviderRef: o.Ref,
			Status: ledger.StatusSucceeded, Limit: 10})
		if err != nil {
			return fmt.Errorf("payonce: listing the captures of %s: %w", o.Ref, err)
		}
		amounts := []int64{}
		for _, c := range ops {
			if c.PaymentRef != "" && c.PaymentRef != o.Ref {
				continue
			}
			amt, cur := ledgerdriver.RequestAmount(c.Request)
			if amt > 0 && (cur == "" || o.Currency == "" || strings.EqualFold(cur, o.Currency)) {
				amounts = append(amounts, amt)
			}
		}
		if g.Captured == nil {
			g.Captured = map[string][]int64{}
		}
		g.Captured[o.Ref] = amounts
	}
	return nil
}

// cleanText is s as a ledger can store and compare it: invalid UTF-8 and
// NUL bytes become U+FFFD. An operation id so cleaned is none the ledger
// holds (payonce never makes one), so its object is unknown to the ledger,
// which is what it is: money moved under an id payonce did not write.
func cleanText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// cleanAuditObject cleans every text of a listed object (cleanText): the
// provider's metadata, ids and words are used in the ledger's queries
// (Store.Get, Store.List) and findings, which refuse what they cannot store.
func cleanAuditObject(o *AuditObject) {
	for _, s := range []*string{&o.Ref, &o.OperationID, &o.Key, &o.Status, &o.Currency, &o.PaymentRef} {
		*s = cleanText(*s)
	}
	o.Kind, o.State = Kind(cleanText(string(o.Kind))), AuditState(cleanText(string(o.State)))
}

// emit counts, hands out, lists and (unless DryRun) queues one difference.
// An unattributed object (no Class) is listed on request only.
func (a *auditRun) emit(ctx context.Context, d AuditDifference) error {
	// What the provider wrote is anyone's text: a ledger stores no NUL
	// byte nor invalid UTF-8, and a batch holding one would be refused
	// whole.
	d.OperationID, d.ProviderRef, d.Detail = cleanText(d.OperationID), cleanText(d.ProviderRef), cleanText(d.Detail)
	if d.Class != "" {
		a.rep.Counts[d.Class]++
		a.c.tel.auditDifference(ctx, d.Class)
	}
	if a.p.OnDifference != nil {
		a.p.OnDifference(d)
	}
	switch {
	case d.Class == "" && len(a.unattributed) < a.p.MaxListed:
		a.unattributed = append(a.unattributed, d)
	case d.Class == "":
		a.moreUnattributed = true
	case len(a.rep.Differences) < a.p.MaxListed:
		a.rep.Differences = append(a.rep.Differences, d)
	default:
		a.rep.Truncated = true
	}
	if d.Class == "" || a.p.DryRun {
		return nil
	}
	a.findings = append(a.findings, ledger.NewFinding{Provider: a.provider, Class: d.Class, OperationID: findingRef(d.OperationID),
		ProviderRef: findingRef(d.ProviderRef), Detail: truncate(d.Detail, 2000), PeriodFrom: a.p.From, PeriodTo: a.p.To})
	if len(a.findings) >= auditFindingBatch {
		return a.flush(ctx)
	}
	return nil
}

// findingRef is s as a finding's OperationID or ProviderRef: at most
// ledger.MaxFindingRefBytes, which the ledger refuses beyond (a provider's
// metadata is anyone's text, and one long id would make the store refuse
// the audit's whole batch, every run). A longer s keeps its start and ends
// with a digest of the whole, so that two ids that share the start stay
// two findings (one batch may not hold one finding twice).
func findingRef(s string) string {
	if len(s) <= ledger.MaxFindingRefBytes {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	tail := "…sha256:" + hex.EncodeToString(sum[:16])
	return truncate(s, ledger.MaxFindingRefBytes-len(tail)) + tail
}

// listDone lists the unattributed objects after the differences, as many
// as MaxListed leaves room for.
func (a *auditRun) listDone() {
	u := a.unattributed
	if room := a.p.MaxListed - len(a.rep.Differences); len(u) > room {
		u, a.moreUnattributed = u[:room], true
	}
	a.rep.Differences = append(a.rep.Differences, u...)
	a.rep.Truncated = a.rep.Truncated || a.moreUnattributed
	a.unattributed = nil
}

// flush records the queued findings, in one transaction.
func (a *auditRun) flush(ctx context.Context) error {
	if len(a.findings) == 0 {
		return nil
	}
	if err := a.c.cfg.Store.RecordFindings(ctx, a.findings, a.c.cfg.Now()); err != nil {
		return fmt.Errorf("payonce: recording %d audit findings: %w", len(a.findings), err)
	}
	a.findings = a.findings[:0]
	return nil
}

// byLookup is the audit of a provider that lists nothing (Checkout.com):
// each settled ledger operation of the period is looked up, read-only, as
// the reconciler would, and the answer compared with the ledger. It sees
// the ledger → provider direction only: an object the ledger never heard
// of is found by no lookup.
func (a *auditRun) byLookup(ctx context.Context) error {
	return a.eachLedgerOp(ctx, func(op ledger.Operation) error {
		switch op.Status {
		case ledger.StatusSucceeded, ledger.StatusFailed, ledger.StatusManualReview:
		default:
			return nil // the reconciler settles it
		}
		req, err := ParseRequest(op.Request)
		if err != nil {
			return fmt.Errorf("payonce: reading the request of %s: %w", op.ID, err)
		}
		q, err := a.c.lookupQuery(ctx, op, req, nil)
		if err != nil {
			return err
		}
		// An audit's lookup searches by the operation id even when the
		// ledger knows the object: a second object made elsewhere under the
		// same reference is what an audit is for (LookupQuery.Audit).
		q.Audit = true
		// The lookup takes the audit's doer (GET and HEAD only), not the
		// reconciler's: an adapter's Lookup with a bug must not turn an
		// audit into a request that moves money either.
		lctx, cancel := context.WithTimeout(ctx, a.c.cfg.AttemptTimeout)
		lr, err := a.c.cfg.Provider.Lookup(lctx, auditDoer{c: a.c, opID: op.ID}, q)
		cancel()
		if err != nil {
			return fmt.Errorf("payonce: looking up %s: %w", op.ID, err)
		}
		lagPassed := true
		if lr.State == LookupNotFound && lr.Lag > 0 {
			_, atts, err := a.c.cfg.Store.Get(ctx, op.ID)
			if err != nil {
				return fmt.Errorf("payonce: reading the attempts of %s: %w", op.ID, err)
			}
			lagPassed = !a.c.cfg.Now().Before(a.c.lastAttemptEnd(atts).Add(lr.Lag))
		}
		for _, d := range classifyLookup(op, lr, lagPassed, a.provider) {
			if err := a.emit(ctx, d); err != nil {
				return err
			}
		}
		return nil
	})
}

// classifyLookup is what a lookup's answer means for a settled operation,
// as a pure function. lagPassed: an eventually consistent lookup's lag has
// passed since the operation's last attempt (a "not found" before is no
// evidence).
func classifyLookup(op ledger.Operation, lr LookupResult, lagPassed bool, provider string) []AuditDifference {
	d := AuditDifference{OperationID: op.ID, ProviderRef: lr.ProviderRef, Kind: Kind(op.Kind), LedgerStatus: op.Status}
	if d.ProviderRef == "" {
		d.ProviderRef = op.ProviderRef
	}
	switch {
	case lr.Contradiction != "":
		d.Class, d.Detail = ledger.FindingContradicted, provider+": "+lr.Contradiction
	case lr.State == LookupMultiple:
		d.Class, d.ProviderState = ledger.FindingDuplicated, AuditSucceeded
		d.Detail = fmt.Sprintf("%s holds %d objects for the operation: %s", provider, len(lr.Refs), joinRefs(lr.Refs))
	case lr.State == LookupSucceeded && op.Status != ledger.StatusSucceeded:
		d.Class, d.ProviderState = ledger.FindingStatusDiffers, AuditSucceeded
		d.Detail = fmt.Sprintf("ledger: %s %s; %s: succeeded", op.Kind, op.Status, provider)
	case lr.State == LookupFailed && op.Status == ledger.StatusSucceeded:
		d.Class, d.ProviderState = ledger.FindingStatusDiffers, AuditFailed
		d.Detail = fmt.Sprintf("ledger: %s succeeded; %s: failed %s", op.Kind, provider, lr.Code)
	case lr.State == LookupNotFound && op.Status == ledger.StatusSucceeded && lagPassed:
		d.Class, d.ProviderRef = ledger.FindingMissingAtProvider, op.ProviderRef
		d.Detail = fmt.Sprintf("ledger: %s succeeded (ref %s); %s finds nothing", op.Kind, op.ProviderRef, provider)
	default:
		return nil
	}
	return []AuditDifference{d}
}

// auditDoer sends a lister's requests through the client's read path (as
// a status lookup's) and refuses anything but GET and HEAD: an audit
// reads, and an adapter's bug must not turn it into a request that moves
// money.
type auditDoer struct {
	c *Client
	// opID names the operation a by-lookup audit's request is for (the
	// HTTP layer's log records); empty for a listing.
	opID string
}

func (d auditDoer) Do(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("payonce: an audit sends only GET and HEAD requests, refused %s %s", req.Method, req.URL.Path)
	}
	// Each request within one AttemptTimeout, as a lookup: a provider
	// that hangs mid-page must not hang the audit. The deadline covers
	// reading the body, so it ends when the body is closed.
	ctx, cancel := context.WithTimeout(req.Context(), d.c.cfg.AttemptTimeout)
	resp, err := lookupDoer{c: d.c.http.read, opID: d.opID}.Do(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose ends a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// The sorted runs' codec: length-prefixed fields, in a fixed order.

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

type auditDecoder struct {
	b   []byte
	err error
}

func (d *auditDecoder) str() string {
	n, k := binary.Uvarint(d.b)
	if k <= 0 || uint64(len(d.b)-k) < n {
		d.err = errors.New("payonce: corrupt audit record")
		d.b = nil
		return ""
	}
	s := string(d.b[k : k+int(n)])
	d.b = d.b[k+int(n):]
	return s
}

func (d *auditDecoder) int() int64 {
	v, k := binary.Varint(d.b)
	if k <= 0 {
		d.err = errors.New("payonce: corrupt audit record")
		d.b = nil
		return 0
	}
	d.b = d.b[k:]
	return v
}

func timeOf(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func encodeAuditObject(o AuditObject) ([]byte, error) {
	b := make([]byte, 0, 64+len(o.OperationID)+len(o.Ref)+len(o.Key)+len(o.Status)+len(o.PaymentRef))
	for _, s := range []string{o.OperationID, o.Ref, o.Key, string(o.Kind), string(o.State), o.Status, o.Currency, o.PaymentRef} {
		b = appendStr(b, s)
	}
	b = binary.AppendVarint(b, o.Amount)
	return binary.AppendVarint(b, unixNano(o.Created)), nil
}

func decodeAuditObject(b []byte) (AuditObject, error) {
	d := auditDecoder{b: b}
	o := AuditObject{OperationID: d.str(), Ref: d.str(), Key: d.str(), Kind: Kind(d.str()), State: AuditState(d.str()),
		Status: d.str(), Currency: d.str(), PaymentRef: d.str()}
	o.Amount = d.int()
	o.Created = timeOf(d.int())
	return o, d.err
}

// compareAuditObjects orders objects by operation id, then by reference,
// then by creation: a group's objects come in a stable order, and the rows
// of one object (a report is a journal) are adjacent, oldest first.
func compareAuditObjects(x, y AuditObject) int {
	if c := strings.Compare(x.OperationID, y.OperationID); c != 0 {
		return c
	}
	if c := strings.Compare(x.Ref, y.Ref); c != 0 {
		return c
	}
	return x.Created.Compare(y.Created)
}

// latestPerRef keeps, of the objects of one group (in compareAuditObjects
// order), the latest row of each reference: a settlement report lists a
// payment again when it is charged back or the chargeback reversed, and
// those rows are one object whose state is the latest, not duplicates.
func latestPerRef(objs []AuditObject) []AuditObject {
	out := objs[:0]
	for i, o := range objs {
		if i+1 < len(objs) && objs[i+1].Ref == o.Ref {
			continue
		}
		out = append(out, o)
	}
	return out
}

func encodeAuditOp(o auditOp) ([]byte, error) {
	b := make([]byte, 0, 64+len(o.ID)+len(o.ProviderRef)+len(o.PaymentRef))
	for _, s := range []string{o.ID, o.Kind, string(o.Status), o.Currency, o.ProviderRef, o.PaymentRef} {
		b = appendStr(b, s)
	}
	b = binary.AppendVarint(b, o.Amount)
	b = binary.AppendVarint(b, unixNano(o.Created))
	tomb := int64(0)
	if o.Tombstone {
		tomb = 1
	}
	b = binary.AppendVarint(b, tomb)
	b = binary.AppendVarint(b, int64(len(o.Keys)))
	for _, k := range o.Keys {
		b = appendStr(b, k)
	}
	return b, nil
}

func decodeAuditOp(b []byte) (auditOp, error) {
	d := auditDecoder{b: b}
	o := auditOp{ID: d.str(), Kind: d.str(), Status: ledger.Status(d.str()), Currency: d.str(), ProviderRef: d.str(), PaymentRef: d.str()}
	o.Amount = d.int()
	o.Created = timeOf(d.int())
	o.Tombstone = d.int() == 1
	n := d.int()
	if n < 0 || n > 1<<16 {
		return o, errors.New("payonce: corrupt audit record")
	}
	for range n {
		o.Keys = append(o.Keys, d.str())
	}
	return o, d.err
}

// Package sqlstore is the one home of what the SQL stores (ledgerpg and
// ledgersqlite) share: the Go-side flow (the same steps in the same order,
// each store supplying its own statements, transactions and error
// wrapping), the settlement feed's read flow (ReadFeed), the list filters'
// conditions (ListConds, ReviewConds, InboxConds), and Stats' statement and
// the assembly of its rows (StatsStatement, AssembleStats). What a store
// says to its database stays in the store.
package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// LeaseGranted is ledgerdriver.CheckLeaseGranted for operation id with the real
// time since start, measured on the monotonic clock.
func LeaseGranted(id string, now, until, start time.Time) error {
	return ledgerdriver.CheckLeaseGranted(fmt.Sprintf("operation %q", id), now, until, time.Since(start))
}

// Resolution rebuilds the resolution stored on operation id from its
// columns (empty strings for NULL), reporting an outcome the ledger cannot
// have written as corrupt.
func Resolution(id, actor, note, outcome string, at time.Time) (*ledger.Resolution, error) {
	o, err := ledgerdriver.ParseResolutionOutcome(outcome)
	if err != nil {
		return nil, ledgerdriver.Corrupt(id, "resolution_outcome", err)
	}
	return &ledger.Resolution{Actor: actor, Note: note, Outcome: o, At: at}, nil
}

// CleanupSteps are one store's statements for Cleanup. Each returns its
// errors already wrapped the store's way; Cleanup returns them as they are.
type CleanupSteps struct {
	// DeleteBatch deletes, in one transaction, up to batch final operations
	// that finished before finishedBefore and whose key window has closed at
	// now, each leaving its tombstone in the same transaction, and returns
	// how many it deleted.
	DeleteBatch func(now, finishedBefore time.Time, batch int) (int, error)
	// PurgeTombstones deletes up to batch tombstones of operations that
	// finished before finishedBefore and returns how many it deleted.
	PurgeTombstones func(finishedBefore time.Time, batch int) (int, error)
	// PurgeInbox deletes up to batch webhook inbox entries (with their
	// outcomes) received before receivedBefore and returns how many it
	// deleted.
	PurgeInbox func(receivedBefore time.Time, batch int) (int, error)
	// PurgeFeed deletes, from the oldest end of the settlement feed (cursor
	// order), those of the first batch entries made before madeBefore, and
	// returns how many it deleted.
	PurgeFeed func(madeBefore time.Time, batch int) (int, error)
	// Stats sets rep.OldestFinishedAt and rep.Tombstones.
	Stats func(rep *ledger.CleanupReport) error
	// Stopped wraps ctx.Err() when ctx ends between batches.
	Stopped func(error) error
}

// Cleanup runs ledger.Store.Cleanup for validated p: batches of deletes
// until one comes back short, then, with a TombstoneRetention, batches of
// tombstone purges likewise, then batches of inbox purges (entries older
// than ledgerdriver.InboxRetention(p)), then batches of feed purges
// (ledgerdriver.FeedRetention(p)), then the stats. When ctx ends between batches
// it stops and returns what it did so far with steps.Stopped(ctx.Err()).
func Cleanup(ctx context.Context, p ledger.CleanupParams, steps CleanupSteps) (ledger.CleanupReport, error) {
	now := ledgerdriver.UTC(p.Now)
	batch := ledgerdriver.CleanupBatchSize(p)
	var rep ledger.CleanupReport
	for {
		if err := ctx.Err(); err != nil {
			return rep, steps.Stopped(err)
		}
		n, err := steps.DeleteBatch(now, now.Add(-p.Retention), batch)
		if err != nil {
			return rep, err
		}
		if n > 0 {
			rep.Deleted += n
			rep.Tombstoned += n
			rep.Batches++
		}
		if n < batch {
			break
		}
	}
	// purge runs batches of one purge until one comes back short, adding
	// what it deleted to *count.
	purge := func(count *int, step func(before time.Time, batch int) (int, error), before time.Time) error {
		for {
			if err := ctx.Err(); err != nil {
				return steps.Stopped(err)
			}
			n, err := step(before, batch)
			if err != nil {
				return err
			}
			*count += n
			if n < batch {
				return nil
			}
		}
	}
	if p.TombstoneRetention > 0 {
		if err := purge(&rep.TombstonesPurged, steps.PurgeTombstones, now.Add(-p.TombstoneRetention)); err != nil {
			return rep, err
		}
	}
	// The inbox outlives the provider's redelivery window (see
	// ledger.CleanupParams.InboxRetention): an entry deleted while its
	// event may still arrive would let the redelivery apply a second time.
	if err := purge(&rep.InboxPurged, steps.PurgeInbox, now.Add(-ledgerdriver.InboxRetention(p))); err != nil {
		return rep, err
	}
	// Feed entries are purged by age from the oldest end only, and a batch
	// that is not all old stops the purge: an entry a consumer may still
	// need (younger than the retention) is never deleted, and the entries
	// left are always a suffix of the feed, so no consumer sees a hole in
	// the middle of it.
	if err := purge(&rep.FeedPurged, steps.PurgeFeed, now.Add(-ledgerdriver.FeedRetention(p))); err != nil {
		return rep, err
	}
	if err := steps.Stats(&rep); err != nil {
		return rep, err
	}
	return rep, nil
}

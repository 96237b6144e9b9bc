// Package storeflow is the one home of the Go-side flow that the SQL stores
// (ledgerpg and ledgersqlite) share: the same steps in the same order, each
// store supplying its own statements, transactions and error wrapping. What
// a store says to its database stays in the store.
package storeflow

import (
	"context"
	"fmt"
	"time"

	"github.com/payonce/payonce/ledger"
)

// LeaseGranted is ledger.CheckLeaseGranted for operation id with the real
// time since start, measured on the monotonic clock.
func LeaseGranted(id string, now, until, start time.Time) error {
	return ledger.CheckLeaseGranted(fmt.Sprintf("operation %q", id), now, until, time.Since(start))
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
	// Stats sets rep.OldestFinishedAt and rep.Tombstones.
	Stats func(rep *ledger.CleanupReport) error
	// Stopped wraps ctx.Err() when ctx ends between batches.
	Stopped func(error) error
}

// Cleanup runs ledger.Store.Cleanup for validated p: batches of deletes
// until one comes back short, then, with a TombstoneRetention, batches of
// tombstone purges likewise, then batches of inbox purges (entries older
// than p.EffectiveInboxRetention()), then the stats. When ctx ends between batches
// it stops and returns what it did so far with steps.Stopped(ctx.Err()).
func Cleanup(ctx context.Context, p ledger.CleanupParams, steps CleanupSteps) (ledger.CleanupReport, error) {
	now := ledger.UTC(p.Now)
	batch := p.EffectiveBatchSize()
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
	for p.TombstoneRetention > 0 {
		if err := ctx.Err(); err != nil {
			return rep, steps.Stopped(err)
		}
		n, err := steps.PurgeTombstones(now.Add(-p.TombstoneRetention), batch)
		if err != nil {
			return rep, err
		}
		rep.TombstonesPurged += n
		if n < batch {
			break
		}
	}
	// The inbox outlives the provider's redelivery window (see
	// ledger.CleanupParams.InboxRetention): an entry deleted while its
	// event may still arrive would let the redelivery apply a second time.
	for {
		if err := ctx.Err(); err != nil {
			return rep, steps.Stopped(err)
		}
		n, err := steps.PurgeInbox(now.Add(-p.EffectiveInboxRetention()), batch)
		if err != nil {
			return rep, err
		}
		rep.InboxPurged += n
		if n < batch {
			break
		}
	}
	if err := steps.Stats(&rep); err != nil {
		return rep, err
	}
	return rep, nil
}

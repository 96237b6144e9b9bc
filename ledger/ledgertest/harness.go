// Package ledgertest is the conformance suite every ledger.Store must pass.
// A store's own test file calls Run with a function that builds a fresh,
// empty, migrated store for each subtest:
//
//	func TestConformance(t *testing.T) {
//		ledgertest.Run(t, func(t *testing.T) *ledgertest.Harness {
//			s := openFreshStore(t) // own schema or file; cleaned up by t.Cleanup
//			return &ledgertest.Harness{Store: s, ...}
//		})
//	}
package ledgertest

import (
	"context"
	"testing"

	"github.com/payonce/payonce/ledger"
)

// Harness is what a store gives the suite for one subtest. Only Store is
// required; subtests needing a nil hook are skipped.
type Harness struct {
	// Store is a fresh, migrated, empty store that no other subtest sees.
	Store ledger.Store
	// OpenAnother opens a second, independent Store on the same data (another
	// connection pool, another *sql.DB), as a second process would. Nil when
	// the store cannot be shared.
	OpenAnother func(t *testing.T) ledger.Store
	// Reopen closes the store and opens it again on the same data, proving
	// durability. Nil when not applicable. The returned store replaces Store.
	Reopen func(t *testing.T) ledger.Store
	// SetRawStatus writes a raw status string for the operation directly in
	// the database, bypassing every check, to simulate a corrupted row.
	SetRawStatus func(t *testing.T, id, status string)
	// SetRawEventKind writes a raw kind string for the audit entry seq of
	// operation id directly in the database, bypassing every check, to
	// simulate a corrupted entry.
	SetRawEventKind func(t *testing.T, id string, seq int, kind string)
	// BlockWrites makes every write to the store wait (a lock held by
	// another connection, as a caller's open transaction or another process
	// would hold it) until release is called. Reads must not wait. The
	// store's own waits for it must last at least a few seconds before they
	// give up.
	BlockWrites func(t *testing.T) (release func())
	// HoldOperation locks operation id as another transaction that locked
	// its row would, until release is called: writes to that operation
	// wait, writes to others run. waiting reports whether a write waits
	// for the hold. Nil when the store has no lock narrower than every
	// write (SQLite: one write lock per file).
	HoldOperation func(t *testing.T, id string) (waiting func() bool, release func())
	// Consumer builds a settlement-feed consumer (ledgerpg.NewConsumer,
	// ledgersqlite.NewConsumer) of store (Store, or one OpenAnother
	// returned) named name, whose handler, in the consumer's transaction,
	// calls refuse first (when non-nil: an error refuses the entry) and
	// then adds one to the entry's count in a table of the test's own, so
	// that the count commits with the cursor. The error is NewConsumer's.
	// Nil skips the consumer subtests.
	Consumer func(t *testing.T, store ledger.Store, name string, opts ledger.ConsumerOptions, refuse func(ledger.FeedEntry) error) (TestConsumer, error)
	// Applied returns how many times consumer name applied each entry, by
	// the entry's cursor (from the table Consumer's handler writes).
	Applied func(t *testing.T, name string) map[ledger.FeedCursor]int
}

// TestConsumer is a consumer as Harness.Consumer builds it.
type TestConsumer interface {
	Run(ctx context.Context) error
	Nudge()
}

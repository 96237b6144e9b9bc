package sqlstore

import (
	"sync"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// MaxCopies bounds the copies one store keeps (Copies).
const MaxCopies = 8192

// Copies are a store's copies of its own last writes by operation ID, for
// its one-statement writes: each store's revision.go says what a copy
// holds, how the write checks that the row is still that copy, and why a
// copy is never an authority. A copy is taken by the next write of its
// operation; one that is never taken (an operation left to another process)
// is evicted at random once MaxCopies are held. The zero value is ready to
// use; Copies are safe for concurrent use.
type Copies[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

// Put keeps v as the copy of operation id, replacing an older one.
func (c *Copies[T]) Put(id string, v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]T)
	}
	if _, ok := c.m[id]; !ok && len(c.m) >= MaxCopies {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[id] = v
}

// Take removes and returns the copy of operation id: whatever the next
// write does, the copy it was offered is out of date afterwards.
func (c *Copies[T]) Take(id string) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[id]
	if ok {
		delete(c.m, id)
	}
	return v, ok
}

// Len is how many copies are held.
func (c *Copies[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// FinishOnCopy applies ledgerdriver.ApplyFinish to a store's copy of its last
// write of the operation: op, and att, the attempt that write journaled
// (nil when it journaled none). ok is false when the copy cannot decide and
// Finish must take the long way (read the row under the store's lock, then
// decide):
//   - p finishes an attempt the copy does not hold;
//   - the attempt is not the first and may not have reached the provider:
//     where the key window starts then depends on the operation's other
//     attempts (ApplyFinish's othersWindowStart), which the copy does not
//     hold; an attempt that may have reached leaves the window as it is;
//   - the rules refuse the copy (a lease lost, a state conflict): only a
//     row read under the lock may turn into an error for the caller.
func FinishOnCopy(op ledger.Operation, att *ledger.Attempt, p ledger.FinishParams) (ch ledgerdriver.Change, ok bool) {
	var recorded *ledger.Attempt
	if p.Attempt != nil {
		if att == nil || att.Number != p.Attempt.Number || (att.Number != 1 && !p.Attempt.Class.MayHaveReached()) {
			return ledgerdriver.Change{}, false
		}
		recorded = att
	}
	ch, err := ledgerdriver.ApplyFinish(op, p, recorded, time.Time{})
	return ch, err == nil
}

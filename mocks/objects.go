package mocks

import (
	"sort"
	"sync"
	"time"
)

// This file holds what every fake does with its stored objects (payments,
// refunds, charges) the same way: find one by the route's {id} under the
// fake's lock, and order a list newest first. What an object looks like and
// what a missing one answers stay in the provider's own files.

// objectStore is embedded in every fake's handler: the lock that guards the
// provider's objects, and the counter that numbers them in the order the
// fake made them.
type objectStore struct {
	mu  sync.Mutex
	seq int64
}

// stored is what a fake remembers about an object besides the provider's
// rendering of it: when it was made, under which idempotency key, and in
// which order (seq, from objectStore.stamp).
type stored struct {
	seq       int64
	createdAt time.Time
	key       string
}

// stamp numbers a new object made by the request c. mu must be held.
func (o *objectStore) stamp(c *call) stored {
	o.seq++
	return stored{seq: o.seq, createdAt: c.now, key: c.key}
}

// withObject runs fn on the object that m holds under the route's {id},
// with mu held, and returns its answer. When m holds none it answers
// missing(id), an executed request (the lookup ran).
func withObject[T any](mu *sync.Mutex, m map[string]T, c *call, missing func(id string) *response,
	fn func(T) (*response, bool)) (*response, bool) {
	id := c.r.PathValue("id")
	mu.Lock()
	defer mu.Unlock()
	v, ok := m[id]
	if !ok {
		return missing(id), true
	}
	return fn(v)
}

// matching returns the objects of list (in the order the fake made them)
// that keep accepts.
func matching[T any](list []T, keep func(T) bool) []T {
	var out []T
	for _, v := range list {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

// newestFirst returns the objects of list that keep accepts, newest first
// (sortNewestFirst).
func newestFirst[T ordered](list []T, keep func(T) bool) []T {
	out := matching(list, keep)
	sortNewestFirst(out)
	return out
}

// ordered is a stored object that lists sort: created is its creation time
// as the provider compares it (Stripe in seconds, YooKassa exactly), seq the
// order in which the fake made it.
type ordered interface {
	order() (created, seq int64)
}

// sortNewestFirst orders objects by creation time, the newest first;
// objects created at the same time come in the reverse of the order the
// fake made them, so the last one made comes first.
func sortNewestFirst[T ordered](all []T) {
	sort.Slice(all, func(i, j int) bool {
		ci, si := all[i].order()
		cj, sj := all[j].order()
		if ci != cj {
			return ci > cj
		}
		return si > sj
	})
}

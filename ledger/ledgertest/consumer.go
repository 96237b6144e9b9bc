package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// needConsumer skips a subtest whose harness builds no consumer.
func needConsumer(t *testing.T, h *Harness) {
	t.Helper()
	if h.Consumer == nil || h.Applied == nil {
		t.Skip("the harness builds no feed consumer")
	}
}

// mustConsumer is h.Consumer that must succeed.
func mustConsumer(t *testing.T, h *Harness, s ledger.Store, name string, opts ledger.ConsumerOptions, refuse func(ledger.FeedEntry) error) TestConsumer {
	t.Helper()
	c, err := h.Consumer(t, s, name, opts, refuse)
	require.NoError(t, err)
	return c
}

// running runs c until the returned stop is called; stop returns Run's
// error.
func running(t *testing.T, c TestConsumer) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				err = errors.New("Run did not return within 30s of its context's end")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// allEntries is the whole feed.
func allEntries(t *testing.T, s ledger.Store) []ledger.FeedEntry {
	t.Helper()
	var out []ledger.FeedEntry
	var after ledger.FeedCursor
	for {
		page, err := s.Feed(context.Background(), ledger.FeedParams{After: after, Limit: ledger.MaxFeedLimit})
		require.NoError(t, err)
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		after = page[len(page)-1].Cursor
	}
}

// waitVisible waits until the feed returns n entries: on PostgreSQL an
// entry is handed out only once every transaction of the cluster older
// than it has ended (see ledgerpg.Store.Feed), so a consumer woken at once
// may not see it yet, and one with a long Poll would sleep on.
func waitVisible(t *testing.T, s ledger.Store, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(allEntries(t, s)) == n }, 20*time.Second, 10*time.Millisecond)
}

// requireAppliedOnce waits until consumer name has applied every entry of
// the feed, and checks that it applied each exactly once.
func requireAppliedOnce(t *testing.T, h *Harness, s ledger.Store, name string, want int) {
	t.Helper()
	var entries []ledger.FeedEntry
	var got map[ledger.FeedCursor]int
	require.Eventually(t, func() bool {
		entries, got = allEntries(t, s), h.Applied(t, name)
		return len(entries) >= want && len(got) >= len(entries)
	}, 20*time.Second, 10*time.Millisecond, "the consumer applies the whole feed")
	require.Len(t, got, len(entries), "only the feed's entries are applied: %v", got)
	for _, e := range entries {
		require.Equal(t, 1, got[e.Cursor], "entry %s (%s to %s) applied exactly once", e.Cursor, e.OperationID, e.To)
	}
}

// settleAll creates the operations ids and settles every other one
// (succeeded), so that the feed holds creations and settlements.
func settleAll(t *testing.T, s ledger.Store, ids []string) int {
	t.Helper()
	n := 0
	for i, id := range ids {
		if i%2 == 0 {
			reach(t, s, NewOp(id), "w", ledger.StatusSucceeded)
			n += 2
		} else {
			mustCreate(t, s, NewOp(id), base)
			n++
		}
	}
	return n
}

// Two consumers of one name (two replicas: the second on another Store
// when the harness can open one) apply every entry exactly once between
// them, in pages of 3, while operations are written.
func testConsumerReplicas(t *testing.T, h *Harness) {
	needConsumer(t, h)
	s := h.Store
	other := s
	if h.OpenAnother != nil {
		other = h.OpenAnother(t)
	}
	opts := ledger.ConsumerOptions{Poll: 20 * time.Millisecond, Limit: 3}
	stop1 := running(t, mustConsumer(t, h, s, "orders", opts, nil))
	stop2 := running(t, mustConsumer(t, h, other, "orders", opts, nil))
	want := settleAll(t, s, numberedIDs("rep-", 24))
	requireAppliedOnce(t, h, s, "orders", want)
	require.NoError(t, stop1())
	require.NoError(t, stop2())
	require.Empty(t, h.Applied(t, "someone-else"), "the count is per consumer")
}

// An entry committed just before Run's context ends is applied by the
// final pass: nothing nudges the consumer and its poll is an hour away.
func testConsumerFinalPass(t *testing.T, h *Harness) {
	needConsumer(t, h)
	if h.OpenAnother == nil {
		t.Skip("needs a second Store: its writes do not nudge the consumer")
	}
	s := h.Store
	mustCreate(t, s, NewOp("fp-1"), base)
	waitVisible(t, s, 1)
	stop := running(t, mustConsumer(t, h, s, "final", ledger.ConsumerOptions{Poll: time.Hour}, nil))
	requireAppliedOnce(t, h, s, "final", 1)

	other := h.OpenAnother(t)
	mustCreate(t, other, NewOp("fp-2"), base)
	// Visible to a reader now (on PostgreSQL an entry waits for every
	// older transaction of the cluster), and not applied: the consumer
	// sleeps.
	waitVisible(t, s, 2)
	require.Len(t, h.Applied(t, "final"), 1, "the consumer was not woken")
	require.NoError(t, stop())
	got := h.Applied(t, "final")
	require.Len(t, got, 2, "the final pass applied the entry committed before the end")
	for c, n := range got {
		require.Equal(t, 1, n, "entry %s", c)
	}
}

// A handler error rolls the page back (the entries before the refused one
// are not counted twice) and the page is tried again.
func testConsumerHandlerError(t *testing.T, h *Harness) {
	needConsumer(t, h)
	s := h.Store
	for _, id := range numberedIDs("he-", 5) {
		mustCreate(t, s, NewOp(id), base)
	}
	var refused atomic.Int32
	refuse := func(e ledger.FeedEntry) error {
		if e.OperationID == numberedIDs("he-", 5)[2] && refused.Add(1) <= 2 {
			return fmt.Errorf("not yet")
		}
		return nil
	}
	stop := running(t, mustConsumer(t, h, s, "picky", ledger.ConsumerOptions{Poll: 10 * time.Millisecond}, refuse))
	requireAppliedOnce(t, h, s, "picky", 5)
	require.GreaterOrEqual(t, refused.Load(), int32(3), "refused twice, then accepted")
	require.NoError(t, stop())
}

// Bad names and options are refused with a ValidationError naming them.
func testConsumerInvalid(t *testing.T, h *Harness) {
	needConsumer(t, h)
	for _, c := range []struct {
		name  string
		opts  ledger.ConsumerOptions
		field string
	}{
		{"", ledger.ConsumerOptions{}, "name"},
		{"has space", ledger.ConsumerOptions{}, "name"},
		{"ünïcode", ledger.ConsumerOptions{}, "name"},
		{string(make([]byte, ledger.MaxConsumerNameLen+1)), ledger.ConsumerOptions{}, "name"},
		{"ok", ledger.ConsumerOptions{Limit: -1}, "ConsumerOptions.Limit"},
		{"ok", ledger.ConsumerOptions{Limit: ledger.MaxFeedLimit + 1}, "ConsumerOptions.Limit"},
		{"ok", ledger.ConsumerOptions{Poll: time.Nanosecond}, "ConsumerOptions.Poll"},
		{"ok", ledger.ConsumerOptions{Poll: -time.Second}, "ConsumerOptions.Poll"},
		{"ok", ledger.ConsumerOptions{FinalPass: -time.Second}, "ConsumerOptions.FinalPass"},
		{"ok", ledger.ConsumerOptions{MaxBackoff: -time.Second}, "ConsumerOptions.MaxBackoff"},
		{"ok", ledger.ConsumerOptions{Kinds: []string{""}}, "ConsumerOptions.Kinds[0]"},
	} {
		_, err := h.Consumer(t, h.Store, c.name, c.opts, nil)
		require.ErrorIs(t, err, ledger.ErrInvalid, "%q %+v", c.name, c.opts)
		var ve *ledger.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, c.field, ve.Field, "%q %+v: %v", c.name, c.opts, err)
	}
	c := mustConsumer(t, h, h.Store, "once", ledger.ConsumerOptions{Poll: time.Hour}, nil)
	stop := running(t, c)
	require.Eventually(t, func() bool {
		st, err := h.Store.Stats(context.Background(), ledger.StatsParams{})
		return err == nil && len(st.Consumers) == 1
	}, 20*time.Second, 10*time.Millisecond, "the first Run registers")
	require.Error(t, c.Run(context.Background()), "one Run at a time per Consumer")
	require.NoError(t, stop())
}

// Stats lists each consumer: its cursor and the time of the oldest entry
// it has yet to apply (zero when caught up).
func testConsumerStats(t *testing.T, h *Harness) {
	needConsumer(t, h)
	s := h.Store
	st, err := s.Stats(context.Background(), ledger.StatsParams{})
	require.NoError(t, err)
	require.Equal(t, []ledger.ConsumerLag{}, st.Consumers)

	clock := at(time.Hour)
	opts := ledger.ConsumerOptions{Poll: time.Hour, Now: func() time.Time { return clock }}
	stop := running(t, mustConsumer(t, h, s, "stats", opts, nil))
	var lag ledger.ConsumerLag
	require.Eventually(t, func() bool {
		st, err = s.Stats(context.Background(), ledger.StatsParams{})
		require.NoError(t, err)
		return len(st.Consumers) == 1
	}, 20*time.Second, 10*time.Millisecond)
	lag = st.Consumers[0]
	require.Equal(t, "stats", lag.Name)
	require.Empty(t, lag.Cursor)
	require.True(t, lag.Behind.IsZero() && lag.CursorAt.IsZero(), "registered on an empty feed: caught up, %+v", lag)
	requireTime(t, clock, lag.UpdatedAt, "UpdatedAt")
	require.NoError(t, stop())

	// An entry the consumer has not applied (it is stopped).
	mustCreate(t, s, NewOp("st-1"), at(2*time.Minute))
	waitVisible(t, s, 1) // Stats has no gap rule; Feed does, and the consumer reads Feed below
	st, err = s.Stats(context.Background(), ledger.StatsParams{})
	require.NoError(t, err)
	require.Len(t, st.Consumers, 1)
	requireTime(t, at(2*time.Minute), st.Consumers[0].Behind, "Behind")
	require.Equal(t, 58*time.Minute, st.Consumers[0].Lag(at(time.Hour)))

	clock = at(2 * time.Hour)
	waitVisible(t, s, 1)
	stop = running(t, mustConsumer(t, h, s, "stats", opts, nil))
	requireAppliedOnce(t, h, s, "stats", 1)
	require.NoError(t, stop())
	st, err = s.Stats(context.Background(), ledger.StatsParams{})
	require.NoError(t, err)
	lag = st.Consumers[0]
	require.Equal(t, allEntries(t, s)[0].Cursor, lag.Cursor)
	require.True(t, lag.Behind.IsZero(), "caught up: %+v", lag)
	require.Zero(t, lag.Lag(clock))
	requireTime(t, at(2*time.Minute), lag.CursorAt, "CursorAt")
	requireTime(t, clock, lag.UpdatedAt, "UpdatedAt")
}

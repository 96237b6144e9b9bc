package feedconsumer

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/semconv"
)

// fakeFeed is an in-memory feed and cursor with the stores' contract.
type fakeFeed struct {
	mu      sync.Mutex
	entries []ledger.FeedEntry
	cursor  ledger.FeedCursor
	applied []string // operation ids given to the handler
	moveOn  int      // Apply calls left before one reports ErrMoved
	signal  Signal
}

func (f *fakeFeed) add(id, kind string, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = append(f.entries, ledger.FeedEntry{Cursor: ledger.FeedCursor(strconv.Itoa(len(f.entries) + 1)), OperationID: id, Kind: kind, At: at})
}

func (f *fakeFeed) done() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.applied...)
}

func (f *fakeFeed) binding() Binding {
	return Binding{
		Cursor: func(context.Context, time.Time) (ledger.FeedCursor, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.cursor, nil
		},
		Feed: func(_ context.Context, p ledger.FeedParams) ([]ledger.FeedEntry, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			start, _ := strconv.Atoi(string(p.After))
			end := min(start+p.Limit, len(f.entries))
			return append([]ledger.FeedEntry(nil), f.entries[start:end]...), nil
		},
		Apply: func(_ context.Context, old ledger.FeedCursor, page, apply []ledger.FeedEntry, _ time.Time) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.moveOn == 1 { // another replica took this page
				f.moveOn = 0
				for _, e := range page {
					f.applied = append(f.applied, e.OperationID)
				}
				f.cursor = page[len(page)-1].Cursor
				return ErrMoved
			}
			f.moveOn = max(f.moveOn-1, 0)
			if f.cursor != old {
				return ErrMoved
			}
			for _, e := range apply {
				f.applied = append(f.applied, e.OperationID)
			}
			f.cursor = page[len(page)-1].Cursor
			return nil
		},
		Signal: &f.signal,
	}
}

// gauge records the lag gauge's values.
type gauge struct {
	noop.Float64Gauge
	mu   sync.Mutex
	last float64
	set  attribute.Set
}

func (g *gauge) Record(_ context.Context, v float64, opts ...metric.RecordOption) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.last, g.set = v, metric.NewRecordConfig(opts).Attributes()
}

func (g *gauge) value() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last
}

type meterProvider struct {
	noop.MeterProvider
	g *gauge
}

func (p meterProvider) Meter(string, ...metric.MeterOption) metric.Meter { return meter{g: p.g} }

type meter struct {
	noop.Meter
	g *gauge
}

func (m meter) Float64Gauge(name string, _ ...metric.Float64GaugeOption) (metric.Float64Gauge, error) {
	if name != semconv.MetricFeedConsumerLag {
		return nil, errors.New("unexpected gauge " + name)
	}
	return m.g, nil
}

// One pass: the lag is now minus At of the oldest entry not applied, a
// Kinds filter skips entries but moves past them, and a caught-up
// consumer reports 0.
func TestPassLagAndKinds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &fakeFeed{}
	f.add("a", "charge", t0)
	f.add("b", "refund", t0.Add(time.Second))
	f.add("c", "charge", t0.Add(2*time.Second))
	g := &gauge{}
	now := t0.Add(10 * time.Second)
	l, err := New("orders", ledger.ConsumerOptions{Limit: 2, Kinds: []string{"charge"}, Now: func() time.Time { return now }, MeterProvider: meterProvider{g: g}}, f.binding())
	require.NoError(t, err)

	more, err := l.Pass(context.Background())
	require.NoError(t, err)
	require.True(t, more, "a full page")
	require.Equal(t, 10.0, g.value())
	v, ok := g.set.Value(semconv.AttrConsumer)
	require.True(t, ok)
	require.Equal(t, "orders", v.AsString())
	require.Equal(t, []string{"a"}, f.done(), "the refund is skipped")

	more, err = l.Pass(context.Background())
	require.NoError(t, err)
	require.False(t, more)
	require.Equal(t, 8.0, g.value(), "c is the oldest left")
	more, err = l.Pass(context.Background())
	require.NoError(t, err)
	require.False(t, more)
	require.Equal(t, 0.0, g.value(), "caught up")
	require.Equal(t, []string{"a", "c"}, f.done())
	require.Equal(t, ledger.FeedCursor("3"), f.cursor, "past the skipped and the applied")
}

// Run: a page another replica applied (ErrMoved) is read on from its
// cursor, not applied again; the store's signal and Nudge wake a Run that
// would otherwise sleep an hour; the end of the context makes a final
// pass and Run returns nil.
func TestRunMovedNudgeFinalPass(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &fakeFeed{moveOn: 1}
	f.add("a", "charge", t0)
	l, err := New("orders", ledger.ConsumerOptions{Poll: time.Hour}, f.binding())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	require.Eventually(t, func() bool { return len(f.done()) == 1 }, 5*time.Second, time.Millisecond)

	f.add("b", "charge", t0)
	f.signal.Notify() // the store's write
	require.Eventually(t, func() bool { return len(f.done()) == 2 }, 5*time.Second, time.Millisecond)
	f.add("c", "charge", t0)
	l.Nudge()
	require.Eventually(t, func() bool { return len(f.done()) == 3 }, 5*time.Second, time.Millisecond)

	f.add("d", "charge", t0) // nothing wakes the consumer: the final pass applies it
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, []string{"a", "b", "c", "d"}, f.done(), "each once, in order")
}

// Notify without subscribers, and with a full channel, never blocks.
func TestSignalNeverBlocks(t *testing.T) {
	var s Signal
	s.Notify()
	ch, cancel := s.Subscribe()
	s.Notify()
	s.Notify()
	<-ch
	select {
	case <-ch:
		t.Fatal("a burst is one nudge")
	default:
	}
	cancel()
	s.Notify()
	select {
	case <-ch:
		t.Fatal("no nudge after the end of the subscription")
	default:
	}
}

// A Provider filter is applied to the page read, like Kinds: the handler
// sees only that provider's entries and the cursor moves to the end of the
// page, so that a filtered consumer is caught up (for Stats and Cleanup)
// once it has passed the entries it skips.
func TestProviderFilterMovesCursorPastOthers(t *testing.T) {
	f := &fakeFeed{}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, p := range []string{"stripe", "adyen", "stripe", "adyen"} {
		f.add("op-"+strconv.Itoa(i), "charge", at)
		f.entries[i].Provider = p
	}
	l, err := New("orders", ledger.ConsumerOptions{Provider: "stripe"}, f.binding())
	require.NoError(t, err)
	more, err := l.Pass(context.Background())
	require.NoError(t, err)
	require.False(t, more)
	require.Equal(t, []string{"op-0", "op-2"}, f.done(), "only stripe's entries reach the handler")
	require.Equal(t, ledger.FeedCursor("4"), f.cursor, "the cursor passes the other provider's entries too")
}

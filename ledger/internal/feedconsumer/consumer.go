// Package feedconsumer is the loop of the settlement-feed consumers of
// both stores (ledgerpg.Consumer, ledgersqlite.Consumer): poll, nudge,
// compare-and-set of the cursor, retries with backoff, the final pass on
// shutdown and the lag. A store gives it a Binding: how to read its
// cursor, read the feed, and apply a page in one transaction of its own
// kind (pgx.Tx, *sql.Tx).
package feedconsumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/semconv"
)

// ErrMoved is what Binding.Apply returns when the compare-and-set of the
// cursor found another value: another replica applied the page first. The
// transaction is rolled back; the loop rereads the cursor at once.
var ErrMoved = errors.New("the consumer's cursor moved: another replica applied this page")

// Binding is what a store provides.
type Binding struct {
	// Cursor returns the consumer's cursor, registering it at the start of
	// the feed (an empty cursor) when it is new.
	Cursor func(ctx context.Context, now time.Time) (ledger.FeedCursor, error)
	// Feed is the store's Feed.
	Feed func(ctx context.Context, p ledger.FeedParams) ([]ledger.FeedEntry, error)
	// Apply runs one transaction: it moves the cursor from old to the
	// cursor of the last of page, first and only if it still is old
	// (ErrMoved otherwise), then calls handle for each entry of apply, in
	// order, and commits. Any error rolls everything back.
	Apply func(ctx context.Context, old ledger.FeedCursor, page, apply []ledger.FeedEntry, now time.Time) error
	// Signal is the store's nudges (see Signal).
	Signal *Signal
}

// Loop is one consumer.
type Loop struct {
	name    string
	b       Binding
	opts    ledger.ConsumerOptions
	kinds   map[string]bool
	nudge   chan struct{}
	lag     metric.Float64Gauge
	attrs   metric.MeasurementOption
	running atomic.Bool
}

// New validates name and opts, applies the defaults and returns the loop.
func New(name string, opts ledger.ConsumerOptions, b Binding) (*Loop, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if err := validateOptions(opts); err != nil {
		return nil, err
	}
	if opts.Poll == 0 {
		opts.Poll = ledger.DefaultConsumerPoll
	}
	if opts.Limit == 0 {
		opts.Limit = ledger.DefaultFeedLimit
	}
	if opts.FinalPass == 0 {
		opts.FinalPass = ledger.DefaultConsumerFinalPass
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = ledger.DefaultConsumerMaxBackoff
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MeterProvider == nil {
		opts.MeterProvider = noop.NewMeterProvider()
	}
	lag, err := opts.MeterProvider.Meter(semconv.ScopeName).Float64Gauge(semconv.MetricFeedConsumerLag,
		metric.WithUnit("s"), metric.WithDescription("Lag of a settlement-feed consumer: now minus the time of the oldest entry it has yet to apply, 0 when caught up."))
	if err != nil {
		return nil, fmt.Errorf("feed consumer %q: creating the lag gauge: %w", name, err)
	}
	l := &Loop{name: name, b: b, opts: opts, nudge: make(chan struct{}, 1), lag: lag,
		attrs: metric.WithAttributeSet(attribute.NewSet(semconv.AttrConsumer.String(name)))}
	if len(opts.Kinds) > 0 {
		l.kinds = map[string]bool{}
		for _, k := range opts.Kinds {
			l.kinds[k] = true
		}
	}
	l.opts.Kinds = slices.Clone(opts.Kinds)
	return l, nil
}

// ValidateName checks a consumer's name: 1 to ledger.MaxConsumerNameLen
// bytes of letters, digits, '.', '_' and '-', so that it reads the same in
// a log, a metric label and the cursor table.
func ValidateName(name string) error {
	ok := name != "" && len(name) <= ledger.MaxConsumerNameLen
	for _, c := range name {
		ok = ok && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')
	}
	if !ok {
		return &ledger.ValidationError{Field: "name", Problem: fmt.Sprintf(
			"%q is not a consumer name: use 1 to %d letters, digits, '.', '_' or '-' (e.g. \"orders\"); the name keys the consumer's cursor, so every replica of one consumer passes the same name",
			name, ledger.MaxConsumerNameLen)}
	}
	return nil
}

func validateOptions(o ledger.ConsumerOptions) error {
	invalid := func(field, format string, args ...any) error {
		return &ledger.ValidationError{Field: "ConsumerOptions." + field, Problem: fmt.Sprintf(format, args...)}
	}
	switch {
	case o.Poll < 0 || (o.Poll > 0 && o.Poll < 10*time.Millisecond):
		return invalid("Poll", "must be 0 (default %v) or at least 10ms, got %v", ledger.DefaultConsumerPoll, o.Poll)
	case o.Limit < 0 || o.Limit > ledger.MaxFeedLimit:
		return invalid("Limit", "must be between 0 (default %d) and %d, got %d", ledger.DefaultFeedLimit, ledger.MaxFeedLimit, o.Limit)
	case o.FinalPass < 0:
		return invalid("FinalPass", "must not be negative (0: default %v), got %v", ledger.DefaultConsumerFinalPass, o.FinalPass)
	case o.MaxBackoff < 0:
		return invalid("MaxBackoff", "must not be negative (0: default %v), got %v", ledger.DefaultConsumerMaxBackoff, o.MaxBackoff)
	}
	for i, k := range o.Kinds {
		if k == "" {
			return invalid(fmt.Sprintf("Kinds[%d]", i), "must not be empty (e.g. \"charge\")")
		}
		// The cursor moves past every entry whose kind is not listed, for
		// good: a misspelled kind ("Charge", "charges") would match nothing
		// and silently skip every entry the handler was meant to apply. So
		// only the kinds payonce records (payonce.Kind's constants; the
		// ledger cannot import the root package) are accepted.
		switch k {
		case "charge", "capture", "cancel", "refund":
		default:
			return invalid(fmt.Sprintf("Kinds[%d]", i), "%q is not a kind: use \"charge\", \"capture\", \"cancel\" or \"refund\" (lower case): an unknown kind matches no entry, and the consumer would skip them all", k)
		}
	}
	return nil
}

// Name is the consumer's name.
func (l *Loop) Name() string { return l.name }

// Nudge makes a waiting Run read the feed now; it never blocks.
func (l *Loop) Nudge() { notify(l.nudge) }

// Run is the consumer's Run (see ledgerpg.Consumer.Run).
func (l *Loop) Run(ctx context.Context) error {
	if !l.running.CompareAndSwap(false, true) {
		return fmt.Errorf("feed consumer %q: Run is already running (one Run per Consumer; start one Consumer per replica)", l.name)
	}
	defer l.running.Store(false)
	stored, unsubscribe := l.b.Signal.Subscribe()
	defer unsubscribe()

	backoff := time.Duration(0)
	for ctx.Err() == nil {
		more, err := l.Pass(ctx)
		var wait time.Duration
		switch {
		case ctx.Err() != nil:
			continue // the final pass below
		case errors.Is(err, ErrMoved):
			continue // another replica applied a page: read on from its cursor
		case err != nil:
			// A handler error or a lost connection: the page was rolled
			// back and is tried again, after a wait that doubles up to
			// MaxBackoff. A poison entry (one the handler always refuses)
			// blocks the consumer here, by design: skipping it would apply
			// the entries after it before it, and never apply it at all.
			backoff = min(max(2*backoff, l.opts.Poll), l.opts.MaxBackoff)
			wait = backoff
			l.opts.Logger.Warn("payonce: feed consumer: page not applied; retrying", "consumer", l.name, "retry_in", wait, "err", err)
		case more:
			backoff = 0
			continue // a full page: there may be more at once
		default:
			backoff = 0
			wait = l.opts.Poll
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-l.nudge:
		case <-stored:
		}
		t.Stop()
	}
	return l.finalPass(ctx)
}

// finalPass applies what was committed up to the end of Run's context,
// within FinalPass: a settlement committed just before a shutdown reaches
// the handler now rather than at the next start.
func (l *Loop) finalPass(parent context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), l.opts.FinalPass)
	defer cancel()
	for {
		more, err := l.Pass(ctx)
		switch {
		case errors.Is(err, ErrMoved):
			continue
		case err != nil:
			l.opts.Logger.Warn("payonce: feed consumer: final pass failed; the entries are applied at the next start", "consumer", l.name, "err", err)
			return fmt.Errorf("feed consumer %q: final pass: %w", l.name, err)
		case !more:
			return nil
		}
	}
}

// Pass reads the page after the consumer's cursor and applies it in one
// transaction. more reports a full page (read again at once).
func (l *Loop) Pass(ctx context.Context) (more bool, err error) {
	now := l.opts.Now()
	cursor, err := l.b.Cursor(ctx, now)
	if err != nil {
		return false, fmt.Errorf("reading the cursor: %w", err)
	}
	// The Provider filter is applied here, like Kinds, not by Feed: the
	// cursor then moves to the end of every page read, so Stats' lag, and
	// Cleanup (which keeps what the oldest cursor has not passed), see a
	// filtered consumer caught up once it has passed the entries it skips.
	page, err := l.b.Feed(ctx, ledger.FeedParams{After: cursor, Limit: l.opts.Limit})
	if err != nil {
		return false, fmt.Errorf("reading the feed: %w", err)
	}
	l.recordLag(ctx, now, page)
	if len(page) == 0 {
		return false, nil
	}
	apply := page
	if l.kinds != nil || l.opts.Provider != "" {
		apply = make([]ledger.FeedEntry, 0, len(page))
		for _, e := range page {
			if (l.kinds == nil || l.kinds[e.Kind]) && (l.opts.Provider == "" || e.Provider == l.opts.Provider) {
				apply = append(apply, e)
			}
		}
	}
	if err := l.b.Apply(ctx, cursor, page, apply, now); err != nil {
		return false, err
	}
	return len(page) == l.opts.Limit, nil
}

// recordLag records now minus At of the oldest entry after the cursor (the
// first of the page: the feed is in commit order), 0 when there is none.
func (l *Loop) recordLag(ctx context.Context, now time.Time, page []ledger.FeedEntry) {
	lag := 0.0
	if len(page) > 0 && now.After(page[0].At) {
		lag = now.Sub(page[0].At).Seconds()
	}
	l.lag.Record(context.WithoutCancel(ctx), lag, l.attrs)
}

// Signal is a store's "a feed entry may have been written" fanned out to
// the consumers of that store in this process: a hint that makes a
// waiting consumer read the feed before its poll interval ends. Each
// subscriber has a channel of size 1, so a burst of writes costs one read.
// The zero value is ready; it is safe for concurrent use.
type Signal struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
	n    atomic.Int32
}

// Subscribe returns a channel that receives the nudges, and the function
// that ends the subscription.
func (s *Signal) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	if s.subs == nil {
		s.subs = map[chan struct{}]struct{}{}
	}
	s.subs[ch] = struct{}{}
	s.n.Store(int32(len(s.subs)))
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.subs, ch)
		s.n.Store(int32(len(s.subs)))
		s.mu.Unlock()
	}
}

// Notify nudges every subscriber without blocking; without subscribers it
// costs one atomic load.
func (s *Signal) Notify() {
	if s.n.Load() == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs {
		notify(ch)
	}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

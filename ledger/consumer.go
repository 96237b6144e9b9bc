package ledger

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// Defaults and limits of ConsumerOptions.
const (
	// DefaultConsumerPoll is ConsumerOptions.Poll when it is zero.
	DefaultConsumerPoll = time.Second
	// DefaultConsumerFinalPass is ConsumerOptions.FinalPass when it is zero.
	DefaultConsumerFinalPass = 5 * time.Second
	// DefaultConsumerMaxBackoff is ConsumerOptions.MaxBackoff when it is
	// zero.
	DefaultConsumerMaxBackoff = time.Minute
	// MaxConsumerNameLen is the longest consumer name, in bytes.
	MaxConsumerNameLen = 128
)

// ConsumerOptions configure a settlement-feed consumer (ledgerpg.NewConsumer,
// ledgersqlite.NewConsumer). The zero value is valid.
//
// There is deliberately no status filter: a consumer receives every entry
// (see "The settlement feed" in the package documentation) and its handler
// decides what each one means.
type ConsumerOptions struct {
	// Poll is how long the consumer waits for new entries before it reads
	// the feed again when nothing nudged it. Defaults to
	// DefaultConsumerPoll; at least 10ms.
	Poll time.Duration
	// Limit is the most entries applied in one transaction: 0 means
	// DefaultFeedLimit; at most MaxFeedLimit.
	Limit int
	// Provider, when non-empty, passes only that provider's entries (its
	// name as the adapter gives it, e.g. "stripe") to the handler; the
	// cursor moves past the others.
	Provider string
	// Kinds, when non-empty, passes only entries of these kinds (charge,
	// capture, cancel, refund) to the handler; the cursor moves past the
	// others.
	Kinds []string
	// FinalPass bounds the last pass Run makes after its context ends.
	// Defaults to DefaultConsumerFinalPass.
	FinalPass time.Duration
	// MaxBackoff is the longest wait before a page whose handler or
	// transaction failed is tried again (the wait doubles from Poll).
	// Defaults to DefaultConsumerMaxBackoff.
	MaxBackoff time.Duration
	// Logger receives the consumer's failures (a handler error, a lost
	// connection). Defaults to discarding them.
	Logger *slog.Logger
	// Now is the clock of the lag (the metric and the cursor's updated_at).
	// Defaults to time.Now.
	Now func() time.Time
	// MeterProvider receives the lag gauge (semconv.MetricFeedConsumerLag).
	// Defaults to a no-op provider: a library records nothing the caller
	// did not ask for.
	MeterProvider metric.MeterProvider
}

// ConsumerLag is one named feed consumer as Stats sees it.
type ConsumerLag struct {
	// Name is the consumer's name.
	Name string
	// Cursor is the position of the last entry it applied (empty before
	// the first).
	Cursor FeedCursor
	// CursorAt is At of the last entry it applied (zero before the first).
	CursorAt time.Time
	// UpdatedAt is when the consumer last moved its cursor (its own clock),
	// or registered.
	UpdatedAt time.Time
	// Behind is At of the oldest feed entry after the cursor: the entry the
	// consumer has yet to apply. Zero when it is caught up. The lag is the
	// reader's now minus Behind. A consumer with a Provider or Kinds filter
	// is behind every entry, also those it skips, until it has passed them.
	Behind time.Time
}

// Lag is now minus Behind, or 0 when the consumer is caught up.
func (c ConsumerLag) Lag(now time.Time) time.Duration {
	if c.Behind.IsZero() || now.Before(c.Behind) {
		return 0
	}
	return now.Sub(c.Behind)
}

package ledgerdriver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// A bad reference part or event is named with its index, so that the
// caller knows which one to fix.
func TestValidationNamesTheIndex(t *testing.T) {
	op := ledger.NewOperation{ID: "op", Key: "op", Provider: "stripe", Kind: "charge", References: []string{"order", "a\x00b"},
		Fingerprint: "fp", Request: []byte(`{}`), KeyTTL: 24 * 60 * 60 * 1e9}
	require.ErrorContains(t, ledgerdriver.ValidateOperation(op), "invalid References[1]: must not contain a NUL byte")
	op.References[1] = ""
	require.ErrorContains(t, ledgerdriver.ValidateOperation(op), "invalid References[1]: must not be empty")
	op.References[1] = "1"
	require.NoError(t, ledgerdriver.ValidateOperation(op))

	good := ledger.NewEvent{Kind: ledger.EventNote, Actor: "w"}
	for _, c := range []struct {
		bad  ledger.NewEvent
		want string
	}{
		{ledger.NewEvent{Kind: "no such kind"}, "invalid Events[1].Kind:"},
		{ledger.NewEvent{Kind: good.Kind, Actor: "a\x00"}, "invalid Events[1].Actor: must not contain a NUL byte"},
		{ledger.NewEvent{Kind: good.Kind, Actor: strings.Repeat("a", 257)}, "invalid Events[1].Actor: is 257 bytes; at most 256"},
		{ledger.NewEvent{Kind: good.Kind, Detail: "\xff"}, "invalid Events[1].Detail: must be valid UTF-8"},
	} {
		p := ledger.StartAttemptParams{ID: "op", Events: []ledger.NewEvent{good, c.bad}}
		err := ledgerdriver.ValidateStartAttempt(p)
		require.ErrorContains(t, err, c.want)
		require.ErrorIs(t, err, ledger.ErrInvalid)
	}
}

// The inbox must outlast every provider's redelivery: an entry deleted while
// its event may still be delivered lets the delivery apply again (and
// Checkout.com and Adyen sign no timestamp that would tell it is old).
func TestCleanupInboxRetentionOutlastsRedelivery(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	valid := ledger.CleanupParams{Now: time.Unix(1e9, 0), Retention: 2 * day, KeyTTL: day}
	for _, c := range []struct {
		inbox, redelivery time.Duration
		want              string // empty: valid
	}{
		{0, 0, ""},
		{0, 30 * day, ""}, // Adyen's 30 days within the default 31
		{3 * day, 3 * day, ""},
		{0, 32 * day, "invalid InboxRetention: 744h0m0s is shorter than the providers' webhook redelivery window 768h0m0s"},
		{29 * day, 30 * day, "invalid InboxRetention: 696h0m0s is shorter than the providers' webhook redelivery window 720h0m0s: " +
			"an event delivered again after its inbox entry is deleted would apply again; keep entries at least 720h0m0s"},
		{0, -time.Second, "invalid WebhookRedelivery: must be >= 0"},
		{-time.Second, 0, "invalid InboxRetention: must be >= 0"},
	} {
		p := valid
		p.InboxRetention, p.WebhookRedelivery = c.inbox, c.redelivery
		err := ledgerdriver.ValidateCleanup(p)
		if c.want == "" {
			require.NoError(t, err, "inbox %v, redelivery %v", c.inbox, c.redelivery)
			continue
		}
		require.ErrorIs(t, err, ledger.ErrInvalid)
		require.ErrorContains(t, err, c.want)
	}
}

package feedconsumer

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// A Kinds element that is not one of the kinds the ledger records ("Charge",
// "charges", "payment") matches no entry: the consumer would move its
// cursor past every entry and never call the handler, a silent and
// permanent loss. New must refuse it.
func TestKindsMisspelledRefused(t *testing.T) {
	for _, k := range []string{"Charge", "charges", "payment", " refund"} {
		_, err := New("orders", ledger.ConsumerOptions{Kinds: []string{"charge", k}}, (&fakeFeed{}).binding())
		var ve *ledger.ValidationError
		require.True(t, errors.As(err, &ve), "%q: %v", k, err)
		require.Equal(t, "ConsumerOptions.Kinds[1]", ve.Field)
	}
	for _, k := range []string{"charge", "capture", "cancel", "refund"} {
		_, err := New("orders", ledger.ConsumerOptions{Kinds: []string{k}}, (&fakeFeed{}).binding())
		require.NoError(t, err, k)
	}
}

package ledger_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// A bad reference part or event is named with its index, so that the
// caller knows which one to fix.
func TestValidationNamesTheIndex(t *testing.T) {
	op := ledger.NewOperation{ID: "op", Key: "op", Provider: "stripe", Kind: "charge", References: []string{"order", "a\x00b"},
		Fingerprint: "fp", Request: []byte(`{}`), KeyTTL: 24 * 60 * 60 * 1e9}
	require.ErrorContains(t, op.Validate(), "invalid References[1]: must not contain a NUL byte")
	op.References[1] = ""
	require.ErrorContains(t, op.Validate(), "invalid References[1]: must not be empty")
	op.References[1] = "1"
	require.NoError(t, op.Validate())

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
		err := p.Validate()
		require.ErrorContains(t, err, c.want)
		require.ErrorIs(t, err, ledger.ErrInvalid)
	}
}

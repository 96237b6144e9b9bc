package adapterkit_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

func TestHMAC(t *testing.T) {
	t.Parallel()
	key, msg := []byte("key"), []byte("a.b")
	mac := hmac.New(sha256.New, key)
	mac.Write(msg)
	want := mac.Sum(nil)
	got := adapterkit.HMACSHA256(key, []byte("a"), []byte("."), []byte("b"))
	require.Equal(t, want, got, "parts are concatenated")

	require.True(t, adapterkit.EqualHex(got, hex.EncodeToString(want)))
	require.True(t, adapterkit.EqualHex(got, strings.ToUpper(hex.EncodeToString(want))))
	require.True(t, adapterkit.EqualBase64(got, base64.StdEncoding.EncodeToString(want)))
	for _, bad := range []string{"", "zz", hex.EncodeToString(want[:31]), hex.EncodeToString(append(want[:31:31], 0))} {
		require.False(t, adapterkit.EqualHex(got, bad), bad)
	}
	b64 := base64.StdEncoding.EncodeToString(want)
	require.Equal(t, byte('='), b64[len(b64)-1], "32 bytes end in padding")
	// The same bytes spelt otherwise: only the standard text is a match.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	last := strings.IndexByte(alphabet, b64[len(b64)-2]) // its low 2 bits are padding
	otherBits := b64[:len(b64)-2] + string(alphabet[last^1]) + "="
	d, err := base64.StdEncoding.DecodeString(otherBits)
	require.NoError(t, err)
	require.Equal(t, want, d, "non-zero padding bits decode to the same MAC")
	for _, bad := range []string{"", "!!", base64.StdEncoding.EncodeToString(want[:16]), " " + b64, b64 + "\n",
		b64[:20] + "\n" + b64[20:], base64.RawStdEncoding.EncodeToString(want), base64.URLEncoding.EncodeToString(want), otherBits} {
		require.False(t, adapterkit.EqualBase64(got, bad), bad)
	}

	require.True(t, adapterkit.EqualSecret("Bearer x", "Bearer x"))
	require.False(t, adapterkit.EqualSecret("Bearer x", "Bearer y"))
	require.False(t, adapterkit.EqualSecret("", "x"))
}

func TestWebhookErrors(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, adapterkit.Unauthenticated("x", "bad %s", "sig"), payonce.ErrWebhookUnauthenticated)
	require.EqualError(t, adapterkit.Unauthenticated("x", "bad %s", "sig"), "x: webhook: bad sig: payonce: webhook not authenticated")
	require.ErrorIs(t, adapterkit.Credentials("x", "no"), payonce.ErrWebhookCredentials)
	require.ErrorIs(t, adapterkit.Credentials("x", "no"), payonce.ErrWebhookUnauthenticated)
	require.ErrorIs(t, adapterkit.Forbidden("x", "no"), payonce.ErrWebhookForbidden)
	require.ErrorIs(t, adapterkit.Malformed("x", "no"), payonce.ErrWebhookMalformed)

	var v struct {
		A int `json:"a"`
	}
	require.NoError(t, adapterkit.DecodeWebhook("x", []byte(`{"a":1}`), &v))
	for body, want := range map[string]string{
		"":                    "body is empty",
		" \n":                 "body is empty",
		`{"a":`:               "syntax error",
		`{"a":"SECRETVALUE"}`: `field "a" has the wrong type`,
		strings.Repeat(" ", payonce.MaxWebhookBytes+1): "more than",
	} {
		err := adapterkit.DecodeWebhook("x", []byte(body), &v)
		require.ErrorIs(t, err, payonce.ErrWebhookMalformed)
		require.ErrorContains(t, err, want)
		require.NotContains(t, err.Error(), "SECRETVALUE", "the body is never quoted")
	}
}

func TestCheckEvent(t *testing.T) {
	t.Parallel()
	keyLike := regexp.MustCompile(`\bsk_[a-z]+`)
	scrub := func(s string) string { return adapterkit.Scrub(s, keyLike, "SECRET") }
	target := payonce.WebhookTarget{Kind: payonce.KindRefund, ProviderRef: "re_1",
		Code: "c\x00", DeclineCode: "sk_live", Message: "msg SECRET \xff"}
	ev, err := adapterkit.CheckEvent("x", payonce.WebhookEvent{ID: "evt_1", Type: "t",
		Targets: []payonce.WebhookTarget{target, {Kind: payonce.KindCharge}}}, scrub)
	require.NoError(t, err)
	require.Equal(t, []payonce.WebhookTarget{{Kind: payonce.KindRefund, ProviderRef: "re_1", Code: "c",
		DeclineCode: "[REDACTED]", Message: "msg [REDACTED] \uFFFD"}}, ev.Targets, "scrubbed; a target naming nothing dropped")

	many := payonce.WebhookEvent{ID: "e", Type: "t"}
	for range ledger.MaxWebhookTargets + 5 {
		many.Targets = append(many.Targets, payonce.WebhookTarget{Kind: payonce.KindRefund, ProviderRef: "re"})
	}
	ev, err = adapterkit.CheckEvent("x", many, scrub)
	require.NoError(t, err)
	require.Len(t, ev.Targets, ledger.MaxWebhookTargets)

	ev, err = adapterkit.CheckEvent("x", payonce.WebhookEvent{ID: "e", Type: "t", Targets: []payonce.WebhookTarget{{Kind: payonce.KindCharge}}}, scrub)
	require.NoError(t, err)
	require.Nil(t, ev.Targets)

	for name, bad := range map[string]payonce.WebhookEvent{
		"no id":       {Type: "t"},
		"no type":     {ID: "e"},
		"long id":     {ID: strings.Repeat("e", ledger.MaxWebhookIDBytes+1), Type: "t"},
		"nul id":      {ID: "e\x00", Type: "t"},
		"bad utf8":    {ID: "e", Type: "\xff"},
		"nul ref":     {ID: "e", Type: "t", Targets: []payonce.WebhookTarget{{Kind: payonce.KindCharge, ProviderRef: "p\x00"}}},
		"nul op":      {ID: "e", Type: "t", Targets: []payonce.WebhookTarget{{Kind: payonce.KindCharge, OperationID: "\x00"}}},
		"long payref": {ID: "e", Type: "t", Targets: []payonce.WebhookTarget{{Kind: payonce.KindCharge, PaymentRef: strings.Repeat("p", 600)}}},
		"nul key":     {ID: "e", Type: "t", Targets: []payonce.WebhookTarget{{Kind: payonce.KindCharge, ProviderRef: "p", Key: "k\x00"}}},
		"long key":    {ID: "e", Type: "t", Targets: []payonce.WebhookTarget{{Kind: payonce.KindCharge, ProviderRef: "p", Key: strings.Repeat("k", 600)}}},
		"negative":    {ID: "e", Type: "t", Targets: []payonce.WebhookTarget{{Kind: payonce.KindCharge, ProviderRef: "p", Amount: -1}}},
		"bad ccy":     {ID: "e", Type: "t", Targets: []payonce.WebhookTarget{{Kind: payonce.KindCharge, ProviderRef: "p", Currency: "\xff"}}},
	} {
		_, err := adapterkit.CheckEvent("x", bad, scrub)
		require.ErrorIs(t, err, payonce.ErrWebhookMalformed, name)
		evs, err := adapterkit.OneEvent("x", bad, scrub)
		require.ErrorIs(t, err, payonce.ErrWebhookMalformed, name)
		require.Nil(t, evs, name)
	}

	// OneEvent is CheckEvent's event as the delivery's only one.
	evs, err := adapterkit.OneEvent("x", payonce.WebhookEvent{ID: "evt_1", Type: "t", Targets: []payonce.WebhookTarget{target}}, scrub)
	require.NoError(t, err)
	require.Equal(t, []payonce.WebhookEvent{{ID: "evt_1", Type: "t", Targets: []payonce.WebhookTarget{{Kind: payonce.KindRefund, ProviderRef: "re_1", Code: "c",
		DeclineCode: "[REDACTED]", Message: "msg [REDACTED] \uFFFD"}}}}, evs)
}

func TestWebhookState(t *testing.T) {
	t.Parallel()
	for v, want := range map[adapterkit.Verdict]payonce.LookupState{
		adapterkit.VerdictSucceeded:  payonce.LookupSucceeded,
		adapterkit.VerdictFailed:     payonce.LookupFailed,
		adapterkit.VerdictProcessing: payonce.LookupProcessing,
		adapterkit.VerdictNotYet:     payonce.LookupProcessing,
		adapterkit.VerdictUnknown:    payonce.LookupProcessing,
	} {
		require.Equal(t, want, adapterkit.WebhookState(adapterkit.State{Verdict: v}), v)
	}
}

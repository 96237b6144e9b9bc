package yookassa_test

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/yookassa"
)

// FuzzParseWebhook: on any body and source address, ParseWebhook never
// panics and never accepts a delivery from outside the allowlist; from an
// allowed address every target it returns is LookupOnly (never trusted).
func FuzzParseWebhook(f *testing.F) {
	for _, body := range []string{
		string(notice("payment.succeeded", `{"id":"pm1","status":"succeeded","metadata":{"payonce_op":"o","payonce_kind":"charge"}}`)),
		string(notice("refund.succeeded", `{"id":"rf1","payment_id":"pm1","status":"succeeded"}`)),
		string(notice("refund.succeeded", `{"id":"rf1","payment_id":"pm1","status":"succeeded","amount":{"value":"1.50","currency":"RUB"},"description":"payonce_op:o payonce_key:k"}`)),
		`{}`, ``, `[`, `{"type":"notification","event":"x","object":{"id":"\u0000"}}`,
	} {
		f.Add([]byte(body), "127.0.0.1:80")
		f.Add([]byte(body), "[2a02:5180:0:1510::1]:1")
		f.Add([]byte(body), "[2a02:5181::1]:1")
		f.Add([]byte(body), "garbage")
	}
	p := webhookProvider(f)
	f.Fuzz(func(t *testing.T, body []byte, remote string) {
		evs, err := p.ParseWebhook(delivery(remote, body), body)
		if err == nil && !allowedByDefault(remote) {
			t.Fatalf("delivery from %q accepted", remote)
		}
		if err != nil && evs != nil {
			t.Fatalf("events with an error: %v", err)
		}
		// From an allowed address: events or Malformed, never trusted.
		evs, err = p.ParseWebhook(delivery(yooKassaAddr, body), body)
		if err != nil {
			if !errors.Is(err, payonce.ErrWebhookMalformed) {
				t.Fatalf("allowed delivery refused: %v", err)
			}
			return
		}
		for _, ev := range evs {
			for _, tg := range ev.Targets {
				if !tg.LookupOnly {
					t.Fatalf("a YooKassa target is trusted: %+v", tg)
				}
				// What the ledger refuses to store (ledgerdriver.ValidateRecordWebhook).
				if tg.Amount < 0 || !utf8.ValidString(tg.Key) || !utf8.ValidString(tg.Currency) ||
					strings.IndexByte(tg.Key, 0) >= 0 || strings.IndexByte(tg.Currency, 0) >= 0 {
					t.Fatalf("target not storable: %+v", tg)
				}
			}
		}
	})
}

// allowedByDefault is the allowlist check written out independently.
func allowedByDefault(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap().WithZone("")
	for _, pf := range yookassa.DefaultWebhookAllow() {
		if pf.Contains(a) {
			return true
		}
	}
	return false
}

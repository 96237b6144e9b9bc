package checkout_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/payonce/payonce"
)

// FuzzParseWebhook: on any body and Cko-Signature, ParseWebhook never
// panics and never accepts a delivery not signed with the key; signed with
// it, a body parses into storable events or is Malformed.
func FuzzParseWebhook(f *testing.F) {
	for _, body := range []string{
		ckoEvent("payment_approved", `{"id":"pay_1","reference":"op","metadata":{"payonce_op":"op","payonce_kind":"charge"}}`),
		ckoEvent("payment_capture_declined", `{"id":"pay_1","action_id":"act_1","response_code":"x"}`),
		ckoEvent("payment_refunded", `{"id":"pay_1","action_id":"act_1","metadata":{"payonce_kind":["x"]}}`),
		ckoEvent("payment_captured", `{"id":"pay_1","action_id":"act_1","amount":700,"currency":"USD","metadata":{"payonce_key":"k","payonce_kind":"charge"}}`),
		`{}`, ``, `[`, `{"id":"\u0000","type":"x"}`,
	} {
		f.Add([]byte(body), ckoSig("wrong", []byte(body)), true)
		f.Add([]byte(body), "", true)
		f.Add([]byte(body), "00", false)
	}
	p := webhookProvider(f)
	f.Fuzz(func(t *testing.T, body []byte, sig string, sign bool) {
		if evs, err := p.ParseWebhook(delivery(body, sig, ""), body); err == nil || evs != nil {
			t.Fatalf("unsigned delivery accepted: %v %v", evs, err)
		}
		if !sign {
			return
		}
		evs, err := p.ParseWebhook(delivery(body, ckoSig(whSecret, body), ""), body)
		if err != nil {
			if !errors.Is(err, payonce.ErrWebhookMalformed) {
				t.Fatalf("signed delivery refused for its signature: %v", err)
			}
			return
		}
		for _, ev := range evs {
			if ev.ID == "" || ev.Type == "" || len(ev.Targets) > 16 {
				t.Fatalf("event not storable: %+v", ev)
			}
			for _, tg := range ev.Targets {
				// What the ledger refuses to store (ledgerdriver.ValidateRecordWebhook).
				if tg.Amount < 0 || !utf8.ValidString(tg.Key) || !utf8.ValidString(tg.Currency) ||
					strings.IndexByte(tg.Key, 0) >= 0 || strings.IndexByte(tg.Currency, 0) >= 0 {
					t.Fatalf("target not storable: %+v", tg)
				}
			}
		}
	})
}

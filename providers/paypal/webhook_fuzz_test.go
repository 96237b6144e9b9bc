package paypal_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/payonce/payonce"
)

// FuzzParseWebhook: on any body and headers, ParseWebhook never panics; a
// delivery whose signature was not made with the signing key is always
// refused, whatever its headers say; and a delivery signed with it either
// parses into storable events or is refused for its form (malformed, or
// headers out of bounds), never for its signature.
func FuzzParseWebhook(f *testing.F) {
	fx := newWebhookFixture(f, nil)
	at := fx.now.Add(-time.Second).Format(time.RFC3339)
	// PayPal's API holds the seeds' objects (the adapter re-reads them).
	for _, o := range []struct{ rtype, resource string }{{"capture", orderCapture("COMPLETED")}, {"capture", authCapture("DENIED")},
		{"refund", refund("COMPLETED", opRefund, keyRef)}, {"refund", reversal}, {"authorization", authorization("VOIDED")},
		{"checkout-order", completedOrder("CAPTURE", `{"captures":[`+orderCapture("COMPLETED")+`]}`)},
		{"capture", `{"id":"C","status":"COMPLETED","amount":{"currency_code":"USD","value":"-1"}}`}} {
		fx.api.holds(o.rtype, o.resource)
	}
	for _, body := range []string{
		ppEvent("WH-1", "PAYMENT.CAPTURE.COMPLETED", "capture", orderCapture("COMPLETED")),
		ppEvent("WH-2", "PAYMENT.CAPTURE.DENIED", "capture", authCapture("DENIED")),
		ppEvent("WH-3", "PAYMENT.CAPTURE.REFUNDED", "refund", refund("COMPLETED", opRefund, keyRef)),
		ppEvent("WH-4", "PAYMENT.CAPTURE.REVERSED", "refund", reversal),
		ppEvent("WH-5", "PAYMENT.AUTHORIZATION.VOIDED", "authorization", authorization("VOIDED")),
		ppEvent("WH-6", "CHECKOUT.ORDER.COMPLETED", "checkout-order", completedOrder("CAPTURE", `{"captures":[`+orderCapture("COMPLETED")+`]}`)),
		ppEvent("WH-7", "PAYMENT.CAPTURE.COMPLETED", "capture", `{"id":"C","amount":{"currency_code":"USD","value":"-1"}}`),
		`{}`, ``, `[`, `{"id":"\u0000","event_type":"x"}`,
	} {
		f.Add([]byte(body), "8d0b4e30-b1f0-11f0", at, fx.certURL, "SHA256withRSA", "AAAA", true)
		f.Add([]byte(body), "id|x", "2026-12-05T00:00:00Z", "http://api.paypal.com/cert", "SHA1withRSA", signDelivery(testKey(f, 3), "i", at, testWebhookID, []byte(body)), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, id, at, certURL, algo, sig string, sign bool) {
		d := delivery{id: id, at: at, webhookID: testWebhookID, certURL: certURL, algo: algo, body: body, sig: sig}
		if d.sig == "" {
			d.sig = "AAAA"
		}
		// sig is never made with the leaf key (it cannot be guessed), so
		// the delivery must be refused, whatever it says.
		if evs, err := fx.parse(d); err == nil || evs != nil {
			t.Fatalf("unsigned delivery accepted: %v %v", evs, err)
		} else if !errors.Is(err, payonce.ErrWebhookUnauthenticated) && !errors.Is(err, payonce.ErrWebhookMalformed) {
			t.Fatalf("refused without a webhook error: %v", err)
		}
		if !sign {
			return
		}
		good := fx.signed(string(body))
		evs, err := fx.parse(good)
		if err != nil {
			if !errors.Is(err, payonce.ErrWebhookMalformed) {
				t.Fatalf("signed delivery refused for its signature: %v", err)
			}
			return
		}
		for _, ev := range evs {
			if ev.ID == "" || ev.Type == "" || !utf8.ValidString(ev.ID) || strings.IndexByte(ev.ID, 0) >= 0 || len(ev.Targets) > 16 {
				t.Fatalf("event not storable: %+v", ev)
			}
			for _, tg := range ev.Targets {
				if tg.OperationID == "" && tg.ProviderRef == "" && tg.PaymentRef == "" {
					t.Fatalf("target names nothing: %+v", tg)
				}
				if tg.Amount < 0 || !utf8.ValidString(tg.Key) || strings.IndexByte(tg.Key, 0) >= 0 || strings.IndexByte(tg.Currency, 0) >= 0 {
					t.Fatalf("target not storable: %+v", tg)
				}
			}
		}
	})
}

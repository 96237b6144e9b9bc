package stripe_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/payonce/payonce"
)

// FuzzParseWebhook: on any body and Stripe-Signature header, ParseWebhook
// never panics; an unsigned delivery (a header not computed with the
// secret) is always refused; and a delivery signed with the secret either
// parses into storable events or is Malformed.
func FuzzParseWebhook(f *testing.F) {
	ts := strconv.FormatInt(testNow.Unix(), 10)
	for _, body := range []string{
		evtBody("evt_1", "payment_intent.succeeded", `{"id":"pi_1","object":"payment_intent","status":"succeeded","amount_received":1,`+piMeta+`}`),
		evtBody("evt_2", "refund.failed", `{"id":"re_1","object":"refund","status":"failed","failure_reason":"unknown","metadata":{"payonce_op":"o","payonce_kind":"refund"}}`),
		evtBody("evt_3", "charge.refunded", `{"id":"ch_1","object":"charge","refunds":{"data":[{"id":"re_1","object":"refund","status":"succeeded"}]}}`),
		evtBody("evt_4", "charge.dispute.created", `{"id":"du_1","object":"dispute","payment_intent":"pi_1"}`),
		`{}`, ``, `[`, `{"id":"\u0000","type":"x"}`,
	} {
		f.Add([]byte(body), "t="+ts+",v1=00", true)
		f.Add([]byte(body), "t="+ts+",v1="+stripeSig("whsec_wrong", testNow, []byte(body)), false)
		f.Add([]byte(body), "", true)
	}
	p := webhookProvider(f)
	f.Fuzz(func(t *testing.T, body []byte, header string, sign bool) {
		evs, err := p.ParseWebhook(delivery(body, header), body)
		// header is never computed with whSecret (it cannot be guessed), so
		// it must be refused, whatever it says.
		if err == nil || evs != nil {
			t.Fatalf("unsigned delivery accepted: %v %v", evs, err)
		}
		if !sign {
			return
		}
		signed := sigHeader(whSecret, testNow.Add(-time.Second), body)
		evs, err = p.ParseWebhook(delivery(body, signed), body)
		if err != nil {
			if !errorsIsMalformed(err) {
				t.Fatalf("signed delivery refused for its signature: %v", err)
			}
			return
		}
		for _, ev := range evs {
			if ev.ID == "" || ev.Type == "" || len(ev.Targets) > 16 {
				t.Fatalf("event not storable: %+v", ev)
			}
			for _, tg := range ev.Targets {
				if tg.OperationID == "" && tg.ProviderRef == "" && tg.PaymentRef == "" {
					t.Fatalf("target names nothing: %+v", tg)
				}
			}
		}
	})
}

func errorsIsMalformed(err error) bool {
	return errors.Is(err, payonce.ErrWebhookMalformed)
}

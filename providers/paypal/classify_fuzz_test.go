package paypal_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/paypal"
)

// Whatever PayPal (or a proxy) answers, Classify never panics, a 2xx is
// never not_sent, and no text of the Outcome holds a credential or a
// token.
func FuzzClassify(f *testing.F) {
	for _, seed := range []string{
		orderJSON("O", "COMPLETED", "CAPTURE", opID, opID, `{"captures":[{"id":"C","status":"COMPLETED","amount":{"currency_code":"USD","value":"19.99"}}]}`),
		capJSON("C", "DECLINED", "1.00", opID, opID),
		ppErr("UNPROCESSABLE_ENTITY", "INSTRUMENT_DECLINED", testSecret),
		`{"error":"invalid_client","error_description":"` + testToken + `"}`,
		`{"id":"O","status":"COMPLETED","purchase_units":[{"amount":{"currency_code":"HUF","value":"-1"}}]}`,
		``, `null`, `[]`, `<html/>`,
	} {
		for _, status := range []int{200, 201, 204, 401, 409, 422, 429, 500} {
			f.Add(status, seed, 0)
		}
	}
	p := testkit.New(f, paypal.New, paypal.Config{ClientID: testClientID, ClientSecret: testSecret, Now: func() time.Time { return testNow }})
	reqs := []payonce.SendRequest{vaultCharge(), orderCharge(), withKind(vaultCharge(), payonce.KindCapture, 100, "A"),
		withKind(vaultCharge(), payonce.KindCancel, 0, "A"), withKind(vaultCharge(), payonce.KindRefund, 0, "C")}
	f.Fuzz(func(t *testing.T, status int, body string, kind int) {
		if status < 100 || status > 599 {
			return
		}
		r := reqs[(kind%len(reqs)+len(reqs))%len(reqs)]
		o := p.Classify(r, status, nil, []byte(body))
		if status >= 200 && status < 300 && o.Class == ledger.OutcomeNotSent {
			t.Fatalf("2xx classified not_sent: %+v", o)
		}
		texts := strings.Join([]string{o.Message, o.Code, o.DeclineCode, o.Contradiction, o.RequestID}, "\n")
		for _, s := range []string{testSecret, testClientID, testToken} {
			if strings.Contains(texts, s) {
				t.Fatalf("an Outcome holds a credential: %+v", o)
			}
		}
		if !utf8.ValidString(o.Message) {
			t.Fatalf("invalid UTF-8 message: %q", o.Message)
		}
	})
}

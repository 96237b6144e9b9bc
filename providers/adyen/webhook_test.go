package adyen_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/adyen"
)

// item is one notification item of a test delivery.
type item struct {
	psp, orig, merchant, ref, event, success, reason, currency string
	value                                                      int64
	noAmount                                                   bool
	sig                                                        string // set: sent as is instead of the computed one
}

func (it item) fill() item {
	if it.merchant == "" {
		it.merchant = merchant
	}
	if it.currency == "" && !it.noAmount {
		it.currency = "EUR"
	}
	if it.value == 0 && !it.noAmount {
		it.value = 1999
	}
	if it.success == "" {
		it.success = "true"
	}
	return it
}

// signedItem is it signed with testHMAC (unless it.sig is set).
func signedItem(it item) map[string]any {
	it = it.fill()
	sig := it.sig
	if sig == "" {
		var err error
		data := adyen.SignedData(it.psp, it.orig, it.merchant, it.ref, it.value, it.currency, it.event, it.success)
		if it.noAmount {
			// No amount: value and currency are empty strings.
			data = strings.Join([]string{it.psp, it.orig, it.merchant, it.ref, "", "", it.event, it.success}, ":")
		}
		sig, err = adyen.Sign(testHMAC, data)
		if err != nil {
			panic(err)
		}
	}
	m := map[string]any{"additionalData": map[string]any{"hmacSignature": sig},
		"eventCode": it.event, "eventDate": "2026-03-01T13:00:00+01:00", "merchantAccountCode": it.merchant,
		"merchantReference": it.ref, "originalReference": it.orig, "paymentMethod": "visa", "pspReference": it.psp,
		"reason": it.reason, "success": it.success}
	if !it.noAmount {
		m["amount"] = map[string]any{"currency": it.currency, "value": it.value}
	}
	return m
}

func deliveryJSON(t testing.TB, items ...map[string]any) []byte {
	t.Helper()
	var wrapped []map[string]any
	for _, it := range items {
		wrapped = append(wrapped, map[string]any{"NotificationRequestItem": it})
	}
	b, err := json.Marshal(map[string]any{"live": "false", "notificationItems": wrapped})
	require.NoError(t, err)
	return b
}

func webhookRequest(user, pass string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhooks/adyen", nil)
	if user != "" || pass != "" {
		r.SetBasicAuth(user, pass)
	}
	return r
}

// TestHMACVectors checks the signature against the official SDKs' test
// vectors: Adyen/adyen-go-api-library src/hmacvalidator/hmacvalidator_test.go
// and Adyen/adyen-java-api-library src/test/java/com/adyen/util/HMACValidatorTest.java
// (testValidateHMAC; testValidateHMACWithoutEscaping with
// src/test/resources/mocks/hmac-validation-webhook.json, whose
// merchantReference holds ':' and '\' unescaped).
func TestHMACVectors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, key, data, want string
		item                  string
	}{
		{name: "go sdk", key: "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00",
			data: "pspReference:originalReference:merchantAccount:reference:1000:EUR:EVENT:true",
			want: "ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc=",
			item: `{"additionalData":{"hmacSignature":"ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc="},"amount":{"currency":"EUR","value":1000},"eventCode":"EVENT","eventDate":"1970-01-01T00:00:00Z","merchantAccountCode":"merchantAccount","merchantReference":"reference","originalReference":"originalReference","paymentMethod":"VISA","pspReference":"pspReference","reason":"reason","success":"true"}`},
		{name: "java sdk, value as a string", key: "9064450A8892A093D9E97EFCC9639DE31B74F3A7803135555A3C96F5A57915D6",
			data: "test_REPORT_AVAILABLE::Magento2Rik:testMerchantRef1:0:EUR:REPORT_AVAILABLE:true",
			want: "NuEkADFmlCC6VgX+wcoPAegIWxVPNBPCuKlM4Hzo5qc=",
			item: `{"additionalData":{"hmacSignature":"NuEkADFmlCC6VgX+wcoPAegIWxVPNBPCuKlM4Hzo5qc="},"amount":{"currency":"EUR","value":"0"},"eventCode":"REPORT_AVAILABLE","eventDate":"2019-11-20T14:35:36+01:00","merchantAccountCode":"Magento2Rik","merchantReference":"testMerchantRef1","pspReference":"test_REPORT_AVAILABLE","reason":"will contain the url to the report","success":"true"}`},
		{name: "java sdk, no escaping", key: "74F490DD33F7327BAECC88B2947C011FC02D014A473AAA33A8EC93E4DC069174",
			data: `ZVWN7D3WSMK2WN82::AntoniStroinski:\:/\/slashes are fun:1000:EUR:AUTHORISATION:true`,
			want: "CZErGCNQaSsxbaQfZaJlakqo7KPP+mIa8a+wx3yNs9A=",
			item: `{"additionalData":{"hmacSignature":"CZErGCNQaSsxbaQfZaJlakqo7KPP+mIa8a+wx3yNs9A=","authCode":"052095"},"amount":{"currency":"EUR","value":1000},"eventCode":"AUTHORISATION","eventDate":"2023-01-10T13:42:29+01:00","merchantAccountCode":"AntoniStroinski","merchantReference":"\\:/\\/slashes are fun","operations":["CANCEL","CAPTURE","REFUND"],"paymentMethod":"visa","pspReference":"ZVWN7D3WSMK2WN82","reason":"052095:1111:03/2030","success":"true"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := adyen.Sign(tc.key, tc.data)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			// The whole item verifies through ParseWebhook too.
			p, err := adyen.New(adyen.Config{APIKey: testKey, MerchantAccount: "other", HMACKey: tc.key})
			require.NoError(t, err)
			evs, err := p.ParseWebhook(webhookRequest("", ""), []byte(`{"live":"false","notificationItems":[{"NotificationRequestItem":`+tc.item+`}]}`))
			require.NoError(t, err)
			require.Len(t, evs, 1)
			require.Empty(t, evs[0].Targets, "another merchant account: no targets")
		})
	}
	require.Equal(t, "P::M:R:0:EUR:CAPTURE:false", adyen.SignedData("P", "", "M", "R", 0, "EUR", "CAPTURE", "false"))
}

func TestParseWebhookAuthentication(t *testing.T) {
	t.Parallel()
	b := setup(t)
	good := deliveryJSON(t, signedItem(item{psp: "PSP1", ref: chargeReq().OperationID, event: "AUTHORISATION"}))
	for _, tc := range []struct {
		name       string
		user, pass string
		body       []byte
		want       error
	}{
		{"no credentials", "", "", good, payonce.ErrWebhookCredentials},
		{"wrong password", whUser, whPass + "x", good, payonce.ErrWebhookCredentials},
		{"wrong user", "x" + whUser, whPass, good, payonce.ErrWebhookCredentials},
		{"bad signature", whUser, whPass, deliveryJSON(t, signedItem(item{psp: "PSP1", event: "AUTHORISATION", sig: "ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc="})), payonce.ErrWebhookUnauthenticated},
		{"no signature", whUser, whPass, []byte(`{"live":"false","notificationItems":[{"NotificationRequestItem":{"eventCode":"AUTHORISATION","pspReference":"P","success":"true"}}]}`), payonce.ErrWebhookUnauthenticated},
		{"one forged item rejects the batch", whUser, whPass, deliveryJSON(t,
			signedItem(item{psp: "PSP1", event: "AUTHORISATION"}),
			signedItem(item{psp: "PSP2", event: "REFUND", sig: "AAAA"})), payonce.ErrWebhookUnauthenticated},
		{"tampered amount", whUser, whPass, tamper(t, good, func(m map[string]any) { m["amount"].(map[string]any)["value"] = 1 }), payonce.ErrWebhookUnauthenticated},
		{"not json", whUser, whPass, []byte(`<xml/>`), payonce.ErrWebhookMalformed},
		{"no items", whUser, whPass, []byte(`{"live":"false","notificationItems":[]}`), payonce.ErrWebhookMalformed},
		{"bad success", whUser, whPass, deliveryJSON(t, signedItem(item{psp: "PSP1", event: "AUTHORISATION", success: "yes"})), payonce.ErrWebhookMalformed},
		{"data after the notification", whUser, whPass, append(append([]byte(nil), good...), ']'), payonce.ErrWebhookMalformed},
		// Signed, but an id the ledger cannot store: refused once with 400
		// rather than failing to record it at every redelivery.
		{"NUL in pspReference", whUser, whPass, deliveryJSON(t, signedItem(item{psp: "PSP\x00", event: "AUTHORISATION"})), payonce.ErrWebhookMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			evs, err := b.P.ParseWebhook(webhookRequest(tc.user, tc.pass), tc.body)
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, evs)
		})
	}
	evs, err := b.P.ParseWebhook(webhookRequest(whUser, whPass), good)
	require.NoError(t, err)
	require.Len(t, evs, 1)

	// Without a configured HMAC key nothing is accepted.
	p, err := adyen.New(adyen.Config{APIKey: testKey, MerchantAccount: merchant})
	require.NoError(t, err)
	_, err = p.ParseWebhook(webhookRequest("", ""), good)
	require.ErrorIs(t, err, payonce.ErrWebhookUnauthenticated)
	require.ErrorContains(t, err, "HMACKey")

	// The previous key is accepted while a new one propagates.
	rotated := setup(t, func(c *adyen.Config) {
		c.HMACKey, c.PreviousHMACKey = "00112233445566778899AABBCCDDEEFF00112233445566778899AABBCCDDEEFF", testHMAC
	})
	_, err = rotated.P.ParseWebhook(webhookRequest(whUser, whPass), good)
	require.NoError(t, err)
}

func tamper(t *testing.T, body []byte, f func(map[string]any)) []byte {
	t.Helper()
	var n map[string]any
	require.NoError(t, json.Unmarshal(body, &n))
	f(n["notificationItems"].([]any)[0].(map[string]any)["NotificationRequestItem"].(map[string]any))
	out, err := json.Marshal(n)
	require.NoError(t, err)
	return out
}

// TestWebhookEvents is the event mapping table.
func TestWebhookEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	op := chargeReq().OperationID
	capOp := "1b6f3e1c-2c4d-5e6f-8a9b-0c1d2e3f4a5b"
	type want struct {
		kind        payonce.Kind
		opID, ref   string
		payment     string
		state       payonce.LookupState
		reversal    bool
		code        string
		targetCount int
	}
	for _, tc := range []struct {
		name string
		it   item
		want want
	}{
		{"authorised", item{psp: "PAY1", ref: op, event: "AUTHORISATION"}, want{kind: payonce.KindCharge, opID: op, ref: "PAY1", state: payonce.LookupSucceeded, targetCount: 1}},
		{"refused", item{psp: "PAY1", ref: op, event: "AUTHORISATION", success: "false", reason: "Refused"}, want{kind: payonce.KindCharge, opID: op, ref: "PAY1", state: payonce.LookupFailed, code: "refused", targetCount: 1}},
		{"foreign reference", item{psp: "PAY1", ref: "order-42", event: "AUTHORISATION"}, want{kind: payonce.KindCharge, ref: "PAY1", state: payonce.LookupSucceeded, targetCount: 1}},
		{"capture", item{psp: "CAP1", orig: "PAY1", ref: capOp, event: "CAPTURE"}, want{kind: payonce.KindCapture, opID: capOp, ref: "CAP1", payment: "PAY1", state: payonce.LookupSucceeded, targetCount: 1}},
		{"capture refused", item{psp: "CAP1", orig: "PAY1", ref: capOp, event: "CAPTURE", success: "false"}, want{kind: payonce.KindCapture, opID: capOp, ref: "CAP1", payment: "PAY1", state: payonce.LookupFailed, code: "modification_failed", targetCount: 1}},
		{"capture failed later", item{psp: "CAP1", orig: "PAY1", ref: capOp, event: "CAPTURE_FAILED", reason: "Capture Failed"}, want{kind: payonce.KindCapture, opID: capOp, ref: "CAP1", payment: "PAY1", state: payonce.LookupFailed, reversal: true, code: "capture_failed", targetCount: 1}},
		{"cancellation", item{psp: "CAN1", orig: "PAY1", ref: capOp, event: "CANCELLATION", noAmount: true}, want{kind: payonce.KindCancel, opID: capOp, ref: "CAN1", payment: "PAY1", state: payonce.LookupSucceeded, targetCount: 1}},
		{"refund", item{psp: "REF1", orig: "PAY1", ref: capOp, event: "REFUND"}, want{kind: payonce.KindRefund, opID: capOp, ref: "REF1", payment: "PAY1", state: payonce.LookupSucceeded, targetCount: 1}},
		{"refund failed", item{psp: "REF1", orig: "PAY1", ref: capOp, event: "REFUND_FAILED"}, want{kind: payonce.KindRefund, opID: capOp, ref: "REF1", payment: "PAY1", state: payonce.LookupFailed, reversal: true, code: "refund_failed", targetCount: 1}},
		{"refunded reversed", item{psp: "REF1", orig: "PAY1", ref: capOp, event: "REFUNDED_REVERSED"}, want{kind: payonce.KindRefund, opID: capOp, ref: "REF1", payment: "PAY1", state: payonce.LookupFailed, reversal: true, code: "refunded_reversed", targetCount: 1}},
		{"chargeback", item{psp: "CB1", orig: "PAY1", ref: op, event: "CHARGEBACK"}, want{kind: payonce.KindCharge, opID: op, ref: "PAY1", state: payonce.LookupFailed, reversal: true, code: "chargeback", targetCount: 1}},
		{"capture failed that did not happen", item{psp: "CAP1", orig: "PAY1", ref: capOp, event: "CAPTURE_FAILED", success: "false"}, want{}},
		{"cancel or refund", item{psp: "X1", orig: "PAY1", ref: op, event: "CANCEL_OR_REFUND"}, want{}},
		{"technical cancel", item{psp: "X1", orig: "PAY1", ref: op, event: "TECHNICAL_CANCEL"}, want{}},
		{"report", item{psp: "R1", event: "REPORT_AVAILABLE"}, want{}},
		{"other merchant", item{psp: "PAY1", ref: op, event: "AUTHORISATION", merchant: "Other"}, want{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			evs, err := b.P.ParseWebhook(webhookRequest(whUser, whPass), deliveryJSON(t, signedItem(tc.it)))
			require.NoError(t, err)
			require.Len(t, evs, 1)
			ev := evs[0]
			it := tc.it.fill()
			require.Equal(t, it.psp+":"+it.event+":"+it.success, ev.ID)
			require.Equal(t, it.event, ev.Type)
			require.Equal(t, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), ev.OccurredAt.UTC())
			require.Len(t, ev.Targets, tc.want.targetCount)
			if tc.want.targetCount == 0 {
				return
			}
			tg, w := ev.Targets[0], tc.want
			// Every field as the case says (LookupOnly false: Adyen signs
			// its notifications), but the decline code and message.
			require.Equal(t, payonce.WebhookTarget{Kind: w.kind, OperationID: w.opID, ProviderRef: w.ref, PaymentRef: w.payment,
				State: w.state, Reversal: w.reversal, Code: w.code, DeclineCode: tg.DeclineCode, Message: tg.Message}, tg)
		})
	}

	// A batch gives one event per item, in order; a redelivery the same ids.
	body := deliveryJSON(t, signedItem(item{psp: "PAY1", ref: op, event: "AUTHORISATION"}), signedItem(item{psp: "CAP1", orig: "PAY1", ref: capOp, event: "CAPTURE"}))
	a, err := b.P.ParseWebhook(webhookRequest(whUser, whPass), body)
	require.NoError(t, err)
	again, err := b.P.ParseWebhook(webhookRequest(whUser, whPass), body)
	require.NoError(t, err)
	require.Equal(t, a, again)
	require.Equal(t, []string{"PAY1:AUTHORISATION:true", "CAP1:CAPTURE:true"}, []string{a[0].ID, a[1].ID})
}

// FuzzParseWebhook: no input panics, and no event is accepted from a body
// whose items are not all signed with the configured key.
func FuzzParseWebhook(f *testing.F) {
	good := deliveryJSON(f, signedItem(item{psp: "PAY1", ref: testkit.OpID, event: "AUTHORISATION"}), signedItem(item{psp: "CAP1", orig: "PAY1", event: "CAPTURE"}))
	f.Add(good, true)
	f.Add([]byte(`{"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":"x"},"amount":{"value":"1e3"},"success":"true"}}]}`), true)
	f.Add([]byte(`{"notificationItems":[{"NotificationRequestItem":null}]}`), false)
	f.Add([]byte(`{"notificationItems":[{}]} {}`), true)
	f.Add([]byte(``), true)
	f.Add([]byte(strings.Replace(string(good), "PAY1", "PAY2", 1)), true)
	p, err := adyen.New(testConfig())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, auth bool) {
		r := webhookRequest("", "")
		if auth {
			r = webhookRequest(whUser, whPass)
		}
		evs, err := p.ParseWebhook(r, body)
		if err != nil {
			if evs != nil {
				t.Fatal("events returned with an error")
			}
			if !errors.Is(err, payonce.ErrWebhookUnauthenticated) && !errors.Is(err, payonce.ErrWebhookMalformed) {
				t.Fatalf("error of no known kind: %v", err)
			}
			return
		}
		if !auth {
			t.Fatal("accepted without credentials")
		}
		// Every accepted item must carry the signature of its own fields.
		var n struct {
			NotificationItems []struct {
				Item map[string]json.RawMessage `json:"NotificationRequestItem"`
			} `json:"notificationItems"`
		}
		if err := json.Unmarshal(body, &n); err != nil || len(n.NotificationItems) != len(evs) {
			t.Fatalf("accepted %d events from a body that does not decode to as many items (%v)", len(evs), err)
		}
		for i, ev := range evs {
			if ev.ID == "" || ev.Type == "" {
				t.Fatalf("event %d without identity", i)
			}
			str := func(k string) string {
				var s string
				_ = json.Unmarshal(n.NotificationItems[i].Item[k], &s)
				return s
			}
			if ev.Type != str("eventCode") || !strings.HasPrefix(ev.ID, str("pspReference")+":") {
				t.Fatalf("event %d is not its item's", i)
			}
			var ad struct {
				Sig string `json:"hmacSignature"`
			}
			_ = json.Unmarshal(n.NotificationItems[i].Item["additionalData"], &ad)
			if ad.Sig == "" {
				t.Fatalf("event %d accepted without a signature", i)
			}
		}
	})
}

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
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/adyen"
	"github.com/payonce/payonce/providers/providertest"
)

// item is one notification item of a test delivery.
type item struct {
	psp, orig, merchant, ref, event, success, reason, currency string
	value                                                      int64
	noAmount                                                   bool
	sig                                                        string // set: sent as is instead of the computed one
	// rawValue, when set, is sent as amount.value instead of value, and
	// signed as rawText (Adyen signs the value as it sends it).
	rawValue any
	rawText  string
	// extra is added to additionalData (e.g. metadata.payonce_key).
	extra map[string]any
}

// fill sets the defaults: this merchant account, 1999 EUR, success
// "true". "-" for currency or success sends an empty one.
func (it item) fill() item {
	if it.merchant == "" {
		it.merchant = merchant
	}
	switch {
	case it.currency == "-":
		it.currency = ""
	case it.currency == "" && !it.noAmount:
		it.currency = "EUR"
	}
	if it.value == 0 && !it.noAmount {
		it.value = 1999
	}
	switch it.success {
	case "-":
		it.success = ""
	case "":
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
		switch {
		case it.noAmount:
			// No amount: value and currency are empty strings.
			data = strings.Join([]string{it.psp, it.orig, it.merchant, it.ref, "", "", it.event, it.success}, ":")
		case it.rawValue != nil:
			data = strings.Join([]string{it.psp, it.orig, it.merchant, it.ref, it.rawText, it.currency, it.event, it.success}, ":")
		}
		sig, err = adyen.Sign(testHMAC, data)
		if err != nil {
			panic(err)
		}
	}
	ad := map[string]any{"hmacSignature": sig}
	for k, v := range it.extra {
		ad[k] = v
	}
	m := map[string]any{"additionalData": ad,
		"eventCode": it.event, "eventDate": "2026-11-30T13:00:00+01:00", "merchantAccountCode": it.merchant,
		"merchantReference": it.ref, "originalReference": it.orig, "paymentMethod": "visa", "pspReference": it.psp,
		"reason": it.reason, "success": it.success}
	if !it.noAmount {
		m["amount"] = map[string]any{"currency": it.currency, "value": it.value}
		if it.rawValue != nil {
			m["amount"] = map[string]any{"currency": it.currency, "value": it.rawValue}
		}
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
		{name: "no credentials", body: good, want: payonce.ErrWebhookCredentials},
		{name: "wrong password", user: whUser, pass: whPass + "x", body: good, want: payonce.ErrWebhookCredentials},
		{name: "wrong user", user: "x" + whUser, pass: whPass, body: good, want: payonce.ErrWebhookCredentials},
		{name: "bad signature", user: whUser, pass: whPass, body: deliveryJSON(t, signedItem(item{psp: "PSP1", event: "AUTHORISATION", sig: "ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc="})), want: payonce.ErrWebhookUnauthenticated},
		{name: "no signature", user: whUser, pass: whPass, body: []byte(`{"live":"false","notificationItems":[{"NotificationRequestItem":{"eventCode":"AUTHORISATION","pspReference":"P","success":"true"}}]}`), want: payonce.ErrWebhookUnauthenticated},
		{name: "one forged item rejects the batch", user: whUser, pass: whPass, body: deliveryJSON(t,
			signedItem(item{psp: "PSP1", event: "AUTHORISATION"}),
			signedItem(item{psp: "PSP2", event: "REFUND", sig: "AAAA"})), want: payonce.ErrWebhookUnauthenticated},
		{name: "tampered amount", user: whUser, pass: whPass, body: tamper(t, good, func(m map[string]any) { m["amount"].(map[string]any)["value"] = 1 }), want: payonce.ErrWebhookUnauthenticated},
		{name: "not json", user: whUser, pass: whPass, body: []byte(`<xml/>`), want: payonce.ErrWebhookMalformed},
		{name: "no items", user: whUser, pass: whPass, body: []byte(`{"live":"false","notificationItems":[]}`), want: payonce.ErrWebhookMalformed},
		{name: "bad success not signed as sent", user: whUser, pass: whPass, body: tamper(t, good, func(m map[string]any) { m["success"] = "yes" }), want: payonce.ErrWebhookUnauthenticated},
		{name: "unreadable item forged", user: whUser, pass: whPass, body: tamper(t, deliveryJSON(t, signedItem(item{psp: "PSP1", event: "AUTHORISATION", success: "yes"})),
			func(m map[string]any) { m["pspReference"] = "PSP2" }), want: payonce.ErrWebhookUnauthenticated},
		{name: "no NotificationRequestItem", user: whUser, pass: whPass, body: []byte(`{"live":"false","notificationItems":[{"x":1}]}`), want: payonce.ErrWebhookMalformed},
		{name: "data after the notification", user: whUser, pass: whPass, body: append(append([]byte(nil), good...), ']'), want: payonce.ErrWebhookMalformed},
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
		key         string
		amount      int64
		currency    string
	}
	// The key payonce wrote in the payment's metadata, echoed by Adyen in
	// the AUTHORISATION item's additionalData.
	withKey := map[string]any{"metadata.payonce_key": "k-gen-1", "metadata.payonce_op": op, "metadata.order_id": "42"}
	for _, tc := range []struct {
		name string
		it   item
		want want
	}{
		{name: "authorised", it: item{psp: "PAY1", ref: op, event: "AUTHORISATION", extra: withKey}, want: want{kind: payonce.KindCharge, opID: op, ref: "PAY1", state: payonce.LookupSucceeded, targetCount: 1, key: "k-gen-1", amount: 1999, currency: "EUR"}},
		{name: "authorised, no metadata", it: item{psp: "PAY1", ref: op, event: "AUTHORISATION"}, want: want{kind: payonce.KindCharge, opID: op, ref: "PAY1", state: payonce.LookupSucceeded, targetCount: 1, amount: 1999, currency: "EUR"}},
		{name: "refused", it: item{psp: "PAY1", ref: op, event: "AUTHORISATION", success: "false", reason: "Refused", extra: withKey}, want: want{kind: payonce.KindCharge, opID: op, ref: "PAY1", state: payonce.LookupFailed, code: "refused", targetCount: 1, key: "k-gen-1", amount: 1999, currency: "EUR"}},
		{name: "foreign reference", it: item{psp: "PAY1", ref: "order-42", event: "AUTHORISATION"}, want: want{kind: payonce.KindCharge, ref: "PAY1", state: payonce.LookupSucceeded, targetCount: 1, amount: 1999, currency: "EUR"}},
		{name: "value as a string", it: item{psp: "PAY1", ref: op, event: "AUTHORISATION", rawValue: "500", rawText: "500", currency: "USD"}, want: want{kind: payonce.KindCharge, opID: op, ref: "PAY1", state: payonce.LookupSucceeded, targetCount: 1, amount: 500, currency: "USD"}},
		{name: "no amount", it: item{psp: "PAY1", ref: op, event: "AUTHORISATION", noAmount: true}, want: want{kind: payonce.KindCharge, opID: op, ref: "PAY1", state: payonce.LookupSucceeded, targetCount: 1}},
		{name: "capture", it: item{psp: "CAP1", orig: "PAY1", ref: capOp, event: "CAPTURE", value: 700}, want: want{kind: payonce.KindCapture, opID: capOp, ref: "CAP1", payment: "PAY1", state: payonce.LookupSucceeded, targetCount: 1, amount: 700, currency: "EUR"}},
		// A modification item's metadata could only be the payment's: no
		// Key is taken from it.
		{name: "capture with the payment's metadata", it: item{psp: "CAP1", orig: "PAY1", ref: capOp, event: "CAPTURE", extra: withKey}, want: want{kind: payonce.KindCapture, opID: capOp, ref: "CAP1", payment: "PAY1", state: payonce.LookupSucceeded, targetCount: 1, amount: 1999, currency: "EUR"}},
		{name: "capture refused", it: item{psp: "CAP1", orig: "PAY1", ref: capOp, event: "CAPTURE", success: "false"}, want: want{kind: payonce.KindCapture, opID: capOp, ref: "CAP1", payment: "PAY1", state: payonce.LookupFailed, code: "modification_failed", targetCount: 1, amount: 1999, currency: "EUR"}},
		{name: "capture failed later", it: item{psp: "CAP1", orig: "PAY1", ref: capOp, event: "CAPTURE_FAILED", reason: "Capture Failed"}, want: want{kind: payonce.KindCapture, opID: capOp, ref: "CAP1", payment: "PAY1", state: payonce.LookupFailed, reversal: true, code: "capture_failed", targetCount: 1, amount: 1999, currency: "EUR"}},
		{name: "cancellation", it: item{psp: "CAN1", orig: "PAY1", ref: capOp, event: "CANCELLATION", noAmount: true}, want: want{kind: payonce.KindCancel, opID: capOp, ref: "CAN1", payment: "PAY1", state: payonce.LookupSucceeded, targetCount: 1}},
		// A CANCELLATION's amount is the payment's, not the cancel's.
		{name: "cancellation with the payment's amount", it: item{psp: "CAN1", orig: "PAY1", ref: capOp, event: "CANCELLATION"}, want: want{kind: payonce.KindCancel, opID: capOp, ref: "CAN1", payment: "PAY1", state: payonce.LookupSucceeded, targetCount: 1}},
		{name: "refund", it: item{psp: "REF1", orig: "PAY1", ref: capOp, event: "REFUND", value: 300, currency: "GBP"}, want: want{kind: payonce.KindRefund, opID: capOp, ref: "REF1", payment: "PAY1", state: payonce.LookupSucceeded, targetCount: 1, amount: 300, currency: "GBP"}},
		{name: "refund failed", it: item{psp: "REF1", orig: "PAY1", ref: capOp, event: "REFUND_FAILED"}, want: want{kind: payonce.KindRefund, opID: capOp, ref: "REF1", payment: "PAY1", state: payonce.LookupFailed, reversal: true, code: "refund_failed", targetCount: 1, amount: 1999, currency: "EUR"}},
		{name: "refunded reversed", it: item{psp: "REF1", orig: "PAY1", ref: capOp, event: "REFUNDED_REVERSED"}, want: want{kind: payonce.KindRefund, opID: capOp, ref: "REF1", payment: "PAY1", state: payonce.LookupFailed, reversal: true, code: "refunded_reversed", targetCount: 1, amount: 1999, currency: "EUR"}},
		// The disputed amount may be part of the payment: not the charge's.
		{name: "chargeback", it: item{psp: "CB1", orig: "PAY1", ref: op, event: "CHARGEBACK", value: 500}, want: want{kind: payonce.KindCharge, opID: op, ref: "PAY1", state: payonce.LookupFailed, reversal: true, code: "chargeback", targetCount: 1}},
		{name: "capture failed that did not happen", it: item{psp: "CAP1", orig: "PAY1", ref: capOp, event: "CAPTURE_FAILED", success: "false"}, want: want{}},
		{name: "cancel or refund", it: item{psp: "X1", orig: "PAY1", ref: op, event: "CANCEL_OR_REFUND"}, want: want{}},
		{name: "technical cancel", it: item{psp: "X1", orig: "PAY1", ref: op, event: "TECHNICAL_CANCEL"}, want: want{}},
		{name: "report", it: item{psp: "R1", event: "REPORT_AVAILABLE"}, want: want{}},
		{name: "other merchant", it: item{psp: "PAY1", ref: op, event: "AUTHORISATION", merchant: "Other", extra: withKey}, want: want{}},
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
			require.Equal(t, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), ev.OccurredAt.UTC())
			require.Len(t, ev.Targets, tc.want.targetCount)
			if tc.want.targetCount == 0 {
				return
			}
			tg, w := ev.Targets[0], tc.want
			// Every field as the case says (LookupOnly false: Adyen signs
			// its notifications), but the decline code and message.
			require.Equal(t, payonce.WebhookTarget{Kind: w.kind, OperationID: w.opID, ProviderRef: w.ref, PaymentRef: w.payment,
				Key: w.key, Amount: w.amount, Currency: w.currency,
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

// TestParseWebhookUnreadable: an item that verifies but that the adapter
// cannot read is returned as an unreadable event (no targets, the reason,
// an id derived from what was signed), never as an error: Adyen would
// redeliver a refused delivery for 30 days, one at a time, holding every
// later event of the endpoint behind it.
func TestParseWebhookUnreadable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	op := chargeReq().OperationID
	for _, tc := range []struct {
		name, typ, reason string
		it                item
	}{
		{name: "success neither true nor false", typ: "AUTHORISATION", reason: `success is "yes"`, it: item{psp: "PSP1", ref: op, event: "AUTHORISATION", success: "yes"}},
		{name: "no success", typ: "AUTHORISATION", reason: `success is ""`, it: item{psp: "PSP1", ref: op, event: "AUTHORISATION", success: "-"}},
		{name: "NUL in pspReference", typ: "AUTHORISATION", reason: "pspReference", it: item{psp: "PSP\x00", ref: op, event: "AUTHORISATION"}},
		{name: "no pspReference", typ: "CAPTURE", reason: "no pspReference", it: item{orig: "PAY1", ref: op, event: "CAPTURE"}},
		{name: "long pspReference", typ: "REFUND", reason: "longer than", it: item{psp: strings.Repeat("P", 200), orig: "PAY1", event: "REFUND"}},
		{name: "control character in eventCode", typ: "unreadable", reason: "eventCode", it: item{psp: "PSP1", event: "AUTHORISATION\n"}},
		{name: "value not an integer (string)", typ: "AUTHORISATION", reason: `amount.value "12.5"`, it: item{psp: "PSP1", ref: op, event: "AUTHORISATION", rawValue: "12.5", rawText: "12.5"}},
		{name: "value not an integer (number)", typ: "REFUND", reason: `amount.value "12.5"`, it: item{psp: "REF1", orig: "PAY1", ref: op, event: "REFUND", rawValue: 12.5, rawText: "12.5"}},
		{name: "negative value", typ: "CAPTURE", reason: `amount.value "-5"`, it: item{psp: "CAP1", orig: "PAY1", ref: op, event: "CAPTURE", value: -5}},
		{name: "currency not a code", typ: "AUTHORISATION", reason: `amount.currency "EURO"`, it: item{psp: "PSP1", ref: op, event: "AUTHORISATION", currency: "EURO"}},
		{name: "value without currency", typ: "AUTHORISATION", reason: "no currency", it: item{psp: "PSP1", ref: op, event: "AUTHORISATION", rawValue: 100, rawText: "100", currency: "-"}},
		{name: "key not a string", typ: "AUTHORISATION", reason: "metadata.payonce_key", it: item{psp: "PSP1", ref: op, event: "AUTHORISATION", extra: map[string]any{"metadata.payonce_key": 42}}},
		{name: "key too long", typ: "AUTHORISATION", reason: "metadata.payonce_key", it: item{psp: "PSP1", ref: op, event: "AUTHORISATION", extra: map[string]any{"metadata.payonce_key": strings.Repeat("k", adyen.MaxKeyLength+1)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := deliveryJSON(t, signedItem(tc.it))
			evs, err := b.P.ParseWebhook(webhookRequest(whUser, whPass), body)
			require.NoError(t, err, "a verified item is never refused")
			require.Len(t, evs, 1)
			ev := evs[0]
			require.Regexp(t, `^unreadable:[0-9a-f]{64}$`, ev.ID)
			require.Equal(t, tc.typ, ev.Type)
			require.Nil(t, ev.Targets, "nothing of an unreadable item is applied")
			require.Contains(t, ev.Unreadable, tc.reason)
			require.True(t, strings.HasPrefix(ev.Unreadable, "item 0"), ev.Unreadable)
			require.NotContains(t, ev.Unreadable, "\x00")
			require.NotContains(t, ev.Unreadable, testHMAC)

			// The same item in another batch, after a readable one: the
			// same identity (a redelivery is a duplicate), and the readable
			// item is read as ever.
			again, err := b.P.ParseWebhook(webhookRequest(whUser, whPass), batchWith(t, body,
				signedItem(item{psp: "PAY9", ref: op, event: "AUTHORISATION"})))
			require.NoError(t, err)
			require.Len(t, again, 2)
			require.Equal(t, "PAY9:AUTHORISATION:true", again[0].ID)
			require.Len(t, again[0].Targets, 1)
			require.Equal(t, ev.ID, again[1].ID)
			require.Contains(t, again[1].Unreadable, "item 1")
		})
	}

	// What is not read needs no reading: an unknown event's or another
	// merchant account's odd amount leaves it readable, with no targets.
	for _, it := range []item{
		{psp: "R1", event: "REPORT_AVAILABLE", rawValue: "n/a", rawText: "n/a"},
		{psp: "PAY1", ref: op, event: "AUTHORISATION", merchant: "Other", currency: "EURO"},
	} {
		evs, err := b.P.ParseWebhook(webhookRequest(whUser, whPass), deliveryJSON(t, signedItem(it)))
		require.NoError(t, err)
		require.Len(t, evs, 1)
		require.Empty(t, evs[0].Unreadable, it.event)
		require.Empty(t, evs[0].Targets, it.event)
	}
}

// batchWith is the delivery of first followed by the items of body.
func batchWith(t *testing.T, body []byte, first map[string]any) []byte {
	t.Helper()
	var n struct {
		Items []struct {
			Item map[string]any `json:"NotificationRequestItem"`
		} `json:"notificationItems"`
	}
	require.NoError(t, json.Unmarshal(body, &n))
	items := []map[string]any{first}
	for _, c := range n.Items {
		items = append(items, c.Item)
	}
	return deliveryJSON(t, items...)
}

// TestWebhookOtherMerchantAccount: an item of another merchant account
// (an endpoint configured for the company account receives them all) never
// settles one of this account's operations, whatever its merchantReference,
// pspReference or key: it is recorded with no targets and acknowledged.
func TestWebhookOtherMerchantAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	op := chargeReq().OperationID
	for _, it := range []item{
		{psp: "PAY1", ref: op, event: "AUTHORISATION", merchant: merchant + "-EU", extra: map[string]any{"metadata.payonce_key": "k-gen-1"}},
		{psp: "PAY1", ref: op, event: "AUTHORISATION", success: "false", merchant: "OtherAccount"},
		{psp: "CAP1", orig: "PAY1", ref: op, event: "CAPTURE", merchant: "OtherAccount"},
		{psp: "REF1", orig: "PAY1", ref: op, event: "REFUND_FAILED", merchant: "OtherAccount"},
		{psp: "CB1", orig: "PAY1", ref: op, event: "CHARGEBACK", merchant: strings.ToLower(merchant)},
	} {
		evs, err := b.P.ParseWebhook(webhookRequest(whUser, whPass), deliveryJSON(t, signedItem(it)))
		require.NoError(t, err)
		require.Len(t, evs, 1)
		require.Empty(t, evs[0].Targets, "%s of %s", it.event, it.merchant)
		require.Empty(t, evs[0].Unreadable)
		require.Equal(t, it.psp+":"+it.event+":"+it.fill().success, evs[0].ID, "recorded under its own identity")
	}
	// The same items of this account do name the operation.
	evs, err := b.P.ParseWebhook(webhookRequest(whUser, whPass), deliveryJSON(t, signedItem(item{psp: "PAY1", ref: op, event: "AUTHORISATION"})))
	require.NoError(t, err)
	require.Len(t, evs[0].Targets, 1)
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
			switch {
			case ev.Unreadable != "":
				if ev.Targets != nil || !strings.HasPrefix(ev.ID, "unreadable:") {
					t.Fatalf("unreadable event %d has targets or a readable id", i)
				}
			case ev.Type != str("eventCode") || !strings.HasPrefix(ev.ID, str("pspReference")+":"):
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

// TestE2EUnreadableItemInBatch: Adyen batches the CAPTURE of a capture
// payonce is waiting for with an item it signed that payonce cannot read.
// The delivery is acknowledged (200) once both are recorded: the capture
// is settled, the unreadable item is listed for an operator, and its
// redelivery changes nothing. Refused (400), Adyen would deliver the batch
// again and again for 30 days, holding every later event of the endpoint
// behind it. The AUTHORISATION names the key and the amount the charge
// was sent with.
func TestE2EUnreadableItemInBatch(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	ch, err := e.client.Charge(e.ctx, eur("order-5", 1999, true))
	require.NoError(t, err)
	capture := payonce.CaptureParams{OrderID: "order-5", Amount: 1999, Currency: "EUR", PaymentRef: ch.ProviderRef}
	_, err = e.client.Capture(e.ctx, capture)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)

	require.Eventually(t, func() bool { return len(e.hooks.Held()) == 2 }, 10*time.Second, 5*time.Millisecond,
		"the fake's AUTHORISATION and CAPTURE are held back")
	held := e.hooks.Held()
	var genuine struct {
		NotificationItems []struct {
			Item map[string]any `json:"NotificationRequestItem"`
		} `json:"notificationItems"`
	}
	require.NoError(t, json.Unmarshal(held[1].Body, &genuine))
	capItem := genuine.NotificationItems[0].Item
	require.Equal(t, "CAPTURE", capItem["eventCode"])
	bad := signedItem(item{psp: "QFQTPCQ8HXSKGK82", orig: ch.ProviderRef, merchant: e.fake.MerchantAccount(), ref: "order-5",
		event: "REFUND", rawValue: "12.50", rawText: "12.50"})
	batch := providertest.Delivery{Header: held[1].Header.Clone(), RemoteAddr: held[1].RemoteAddr, Body: deliveryJSON(t, capItem, bad)}

	require.Equal(t, http.StatusOK, e.hooks.Direct(batch), "a verified delivery is acknowledged")
	res, err := e.client.Capture(e.ctx, capture)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status, "the readable item of the batch is applied")
	require.Equal(t, 1, e.fake.Truth().Requests["POST /payments/{id}/captures"])

	unreadable, err := e.store.ListWebhooks(e.ctx, ledger.InboxFilter{Provider: "adyen", Disposition: ledger.WebhookUnreadable})
	require.NoError(t, err)
	require.Len(t, unreadable, 1)
	u := unreadable[0]
	require.Equal(t, "REFUND", u.Type)
	require.Contains(t, u.Unreadable, `item 1 (pspReference "QFQTPCQ8HXSKGK82"): amount.value "12.50"`)
	require.Empty(t, u.Targets)

	require.Equal(t, http.StatusOK, e.hooks.Direct(batch), "the redelivery is acknowledged")
	all, err := e.store.ListWebhooks(e.ctx, ledger.InboxFilter{Provider: "adyen"})
	require.NoError(t, err)
	require.Len(t, all, 2, "the CAPTURE and the unreadable item, each once")

	// The rest arrives: the AUTHORISATION carries the key and the amount
	// the charge was sent with (metadata.payonce_key, amount).
	e.deliver(t)
	auth, err := e.store.ListWebhooks(e.ctx, ledger.InboxFilter{Provider: "adyen", OperationID: ch.OperationID})
	require.NoError(t, err)
	require.Len(t, auth, 1)
	require.Equal(t, "AUTHORISATION", auth[0].Type)
	tg := auth[0].Targets[0]
	require.NotEmpty(t, ch.Key)
	require.Equal(t, ch.Key, tg.Key)
	require.Equal(t, int64(1999), tg.Amount)
	require.Equal(t, "EUR", tg.Currency)
	capEntry := all[1]
	if capEntry.Type != "CAPTURE" {
		capEntry = all[0]
	}
	require.Equal(t, "CAPTURE", capEntry.Type)
	require.Equal(t, int64(1999), capEntry.Targets[0].Amount, "the capture's own amount")
	require.Empty(t, capEntry.Targets[0].Key, "modifications carry no metadata")
}

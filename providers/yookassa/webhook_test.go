package yookassa_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/yookassa"
)

func webhookProvider(t testing.TB, allow ...netip.Prefix) *yookassa.Provider {
	t.Helper()
	p, err := yookassa.New(yookassa.Config{ShopID: testShopID, SecretKey: testSecret, WebhookAllow: allow})
	require.NoError(t, err)
	return p
}

func delivery(remote string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhooks/yookassa", bytes.NewReader(body))
	r.RemoteAddr = remote
	return r
}

// yooKassaAddr is an address in YooKassa's published 185.71.76.0/27.
const yooKassaAddr = "185.71.76.7:443"

func notice(event, object string) []byte {
	return []byte(`{"type":"notification","event":"` + event + `","object":` + object + `}`)
}

func TestWebhookAllowlist(t *testing.T) {
	t.Parallel()
	p := webhookProvider(t)
	body := notice("payment.succeeded", `{"id":"2c1d","status":"succeeded","amount":{"value":"1.00","currency":"RUB"}}`)
	for _, remote := range []string{
		"185.71.76.0:1", "185.71.76.31:1", "185.71.77.1:1", "77.75.153.127:1", "77.75.154.128:1", "77.75.154.255:1",
		"77.75.156.11:1", "77.75.156.35:1", "[::ffff:185.71.76.7]:1", "[2a02:5180:0:1509::1]:1",
		"[2a02:5180:0:2655:ffff::1]:1", "[2a02:5180:0:1533::9]:1", "[2a02:5180:0:2669::1%eth0]:1", "77.75.156.11",
		// YooKassa's documented IPv6 network is the whole 2a02:5180::/32,
		// not only the SDKs' four /64s.
		"[2a02:5180::]:1", "[2a02:5180:0:1510::1]:1", "[2a02:5180:1:1509::1]:1", "[2a02:5180:ffff:ffff:ffff:ffff:ffff:ffff]:443",
		"2a02:5180:77::5",
	} {
		_, err := p.ParseWebhook(delivery(remote, body), body)
		require.NoError(t, err, remote)
	}
	for _, remote := range []string{
		"185.71.76.32:1", "77.75.153.128:1", "77.75.156.12:1", "127.0.0.1:1", "[::1]:1",
		// Just outside 2a02:5180::/32, on either side, and a neighbour /32.
		"[2a02:5181::1]:1", "[2a02:517f:ffff:ffff:ffff:ffff:ffff:ffff]:1", "[2a02:5181::]:1", "[2a03:5180::1]:1",
		"[::ffff:2a02:5180]:1", "", "not-an-address", "[::ffff:127.0.0.1]:1",
	} {
		_, err := p.ParseWebhook(delivery(remote, body), body)
		require.ErrorIs(t, err, payonce.ErrWebhookForbidden, remote)
	}

	// A custom list replaces the default (a proxy's address, IPv6 too).
	custom := webhookProvider(t, netip.MustParsePrefix("10.0.0.1/32"), netip.MustParsePrefix("fd00::/8"))
	for remote, ok := range map[string]bool{"10.0.0.1:5": true, "[fd12::1]:5": true, yooKassaAddr: false} {
		_, err := custom.ParseWebhook(delivery(remote, body), body)
		if ok {
			require.NoError(t, err, remote)
		} else {
			require.ErrorIs(t, err, payonce.ErrWebhookForbidden, remote)
		}
	}
	require.Len(t, yookassa.DefaultWebhookAllow(), 7)
}

func TestWebhookTargets(t *testing.T) {
	t.Parallel()
	p := webhookProvider(t)
	meta := `"metadata":{"payonce_op":"op-1","payonce_kind":"charge"}`
	note := func(ev string) string { return "yookassa: unverified notification " + ev + "; a lookup decides" }
	lookup := func(k payonce.Kind, op, ref, pay string, st payonce.LookupState, ev string) payonce.WebhookTarget {
		return payonce.WebhookTarget{Kind: k, OperationID: op, ProviderRef: ref, PaymentRef: pay, State: st, LookupOnly: true, Message: note(ev)}
	}
	for _, tc := range []struct {
		name, event, object, id string
		want                    []payonce.WebhookTarget
	}{
		{name: "waiting for capture", event: "payment.waiting_for_capture", object: `{"id":"pm1","status":"waiting_for_capture",` + meta + `}`, id: "pm1:payment.waiting_for_capture",
			want: []payonce.WebhookTarget{lookup(payonce.KindCharge, "op-1", "pm1", "", payonce.LookupSucceeded, "payment.waiting_for_capture")}},
		{name: "succeeded", event: "payment.succeeded", object: `{"id":"pm1","status":"succeeded",` + meta + `}`, id: "pm1:payment.succeeded",
			want: []payonce.WebhookTarget{lookup(payonce.KindCharge, "op-1", "pm1", "", payonce.LookupSucceeded, "payment.succeeded"),
				lookup(payonce.KindCapture, "", "pm1", "pm1", payonce.LookupSucceeded, "payment.succeeded"),
				lookup(payonce.KindCancel, "", "pm1", "pm1", payonce.LookupFailed, "payment.succeeded")}},
		{name: "canceled", event: "payment.canceled", object: `{"id":"pm1","status":"canceled","cancellation_details":{"party":"merchant","reason":"canceled_by_merchant"}}`, id: "pm1:payment.canceled",
			want: []payonce.WebhookTarget{lookup(payonce.KindCharge, "", "pm1", "", payonce.LookupSucceeded, "payment.canceled"),
				lookup(payonce.KindCapture, "", "pm1", "pm1", payonce.LookupFailed, "payment.canceled"),
				lookup(payonce.KindCancel, "", "pm1", "pm1", payonce.LookupSucceeded, "payment.canceled")}},
		{name: "refund", event: "refund.succeeded", object: `{"id":"rf1","payment_id":"pm1","status":"succeeded","description":"x payonce_op:op-r"}`, id: "rf1:refund.succeeded",
			want: []payonce.WebhookTarget{func() payonce.WebhookTarget {
				t := lookup(payonce.KindRefund, "op-r", "rf1", "pm1", payonce.LookupSucceeded, "refund.succeeded")
				t.Key = "op-r" // generation 0: the key is the operation id
				return t
			}()}},
		{name: "other event", event: "deal.closed", object: `{"id":"dl1"}`, id: "dl1:deal.closed"},
	} {
		body := notice(tc.event, tc.object)
		evs, err := p.ParseWebhook(delivery(yooKassaAddr, body), body)
		require.NoError(t, err, tc.name)
		require.Equal(t, []payonce.WebhookEvent{{ID: tc.id, Type: tc.event, Targets: tc.want}}, evs, tc.name)
	}
}

// Every target carries the object's key, amount and currency as the
// notice's object carries them and the lookup checks them
// (adapterkit.Belongs): YooKassa's notices are never trusted by themselves
// (LookupOnly), but the ledger compares what they say with the operation.
func TestWebhookTargetsKeyAmountCurrency(t *testing.T) {
	t.Parallel()
	p := webhookProvider(t)
	pay := func(status, md string) string {
		return `{"id":"pm1","status":"` + status + `","paid":true,"amount":{"value":"1500.50","currency":"RUB"},` +
			`"metadata":` + md + `,"created_at":"2026-03-01T12:00:00.000Z","test":true}`
	}
	chargeMD := `{"payonce_op":"op-1","payonce_key":"key-1","payonce_kind":"charge","order_id":"42"}`
	type kac struct {
		kind     payonce.Kind
		key      string
		amount   int64
		currency string
	}
	capCancel := []kac{{kind: payonce.KindCapture, amount: 0, currency: "RUB"}, {kind: payonce.KindCancel, amount: 0, currency: "RUB"}}
	for _, tc := range []struct {
		name, event, object string
		want                []kac
	}{
		{name: "waiting for capture", event: "payment.waiting_for_capture", object: pay("waiting_for_capture", chargeMD),
			want: []kac{{kind: payonce.KindCharge, key: "key-1", amount: 150050, currency: "RUB"}}},
		{name: "succeeded", event: "payment.succeeded", object: pay("succeeded", chargeMD), want: append([]kac{{kind: payonce.KindCharge, key: "key-1", amount: 150050, currency: "RUB"}}, capCancel...)},
		{name: "canceled", event: "payment.canceled", object: pay("canceled", chargeMD), want: append([]kac{{kind: payonce.KindCharge, key: "key-1", amount: 150050, currency: "RUB"}}, capCancel...)},
		{name: "another kind's metadata: no key", event: "payment.succeeded", object: pay("succeeded", `{"payonce_op":"op-1","payonce_key":"key-1","payonce_kind":"refund"}`),
			want: append([]kac{{kind: payonce.KindCharge, amount: 150050, currency: "RUB"}}, capCancel...)},
		{name: "no metadata", event: "payment.waiting_for_capture", object: pay("waiting_for_capture", `{}`), want: []kac{{kind: payonce.KindCharge, amount: 150050, currency: "RUB"}}},
		{name: "amount unreadable: not given", event: "payment.waiting_for_capture",
			object: `{"id":"pm1","status":"waiting_for_capture","amount":{"value":"1.234","currency":"RUB"},"metadata":` + chargeMD + `}`,
			want:   []kac{{kind: payonce.KindCharge, key: "key-1", amount: 0, currency: "RUB"}}},
		{name: "refund, generation 0", event: "refund.succeeded",
			object: `{"id":"rf1","payment_id":"pm1","status":"succeeded","amount":{"value":"300.00","currency":"RUB"},"description":"Возврат payonce_op:op-r"}`,
			want:   []kac{{kind: payonce.KindRefund, key: "op-r", amount: 30000, currency: "RUB"}}},
		{name: "refund, a later generation", event: "refund.succeeded",
			object: `{"id":"rf1","payment_id":"pm1","status":"succeeded","amount":{"value":"300","currency":"RUB"},"description":"payonce_op:op-r payonce_key:key-r2"}`,
			want:   []kac{{kind: payonce.KindRefund, key: "key-r2", amount: 30000, currency: "RUB"}}},
		{name: "refund not payonce's", event: "refund.succeeded",
			object: `{"id":"rf1","payment_id":"pm1","status":"succeeded","amount":{"value":"10.00","currency":"USD"},"description":"manual"}`,
			want:   []kac{{kind: payonce.KindRefund, amount: 1000, currency: "USD"}}},
	} {
		body := notice(tc.event, tc.object)
		evs, err := p.ParseWebhook(delivery(yooKassaAddr, body), body)
		require.NoError(t, err, tc.name)
		require.Len(t, evs, 1, tc.name)
		var got []kac
		for _, tg := range evs[0].Targets {
			require.True(t, tg.LookupOnly, tc.name)
			got = append(got, kac{tg.Kind, tg.Key, tg.Amount, tg.Currency})
		}
		require.Equal(t, tc.want, got, tc.name)
	}
}

func TestWebhookMalformed(t *testing.T) {
	t.Parallel()
	p := webhookProvider(t)
	testkit.RequireMalformed(t, func(body string) error {
		_, err := p.ParseWebhook(delivery(yooKassaAddr, []byte(body)), []byte(body))
		return err
	}, map[string]string{
		"empty":          ``,
		"not json":       `{"id":`,
		"a lone brace":   `{`,
		"not a notice":   `{"type":"payment","event":"payment.succeeded","object":{"id":"pm1","status":"succeeded"}}`,
		"no event":       `{"type":"notification","object":{"id":"pm1"}}`,
		"no object":      `{"type":"notification","event":"payment.succeeded"}`,
		"no object id":   `{"type":"notification","event":"payment.succeeded","object":{"status":"succeeded"}}`,
		"object not obj": `{"type":"notification","event":"payment.succeeded","object":"pm1"}`,
		"no status":      `{"type":"notification","event":"payment.succeeded","object":{"id":"pm1"}}`,
		"refund no pay":  `{"type":"notification","event":"refund.succeeded","object":{"id":"rf1","status":"succeeded"}}`,
		"nul id":         `{"type":"notification","event":"deal.closed","object":{"id":"a\u0000"}}`,
		"nul in key":     `{"type":"notification","event":"payment.succeeded","object":{"id":"pm1","status":"succeeded","metadata":{"payonce_key":"k\u0000","payonce_kind":"charge"}}}`,
		"nul currency":   `{"type":"notification","event":"refund.succeeded","object":{"id":"rf1","payment_id":"pm1","status":"succeeded","amount":{"value":"1","currency":"R\u0000"}}}`,
	})
}

func TestWebhookAllowConfig(t *testing.T) {
	t.Parallel()
	_, err := yookassa.New(yookassa.Config{ShopID: testShopID, SecretKey: testSecret, WebhookAllow: []netip.Prefix{{}}})
	require.ErrorIs(t, err, payonce.ErrInvalid)
	require.ErrorContains(t, err, "yookassa.Config.WebhookAllow[0]")

	allow := []netip.Prefix{netip.MustParsePrefix("10.0.0.7/8")}
	cfg := yookassa.Config{ShopID: testShopID, SecretKey: testSecret, WebhookAllow: allow}
	p, err := yookassa.New(cfg)
	require.NoError(t, err)
	allow[0] = netip.MustParsePrefix("0.0.0.0/0") // the Provider keeps its own copy
	_, err = p.ParseWebhook(delivery("192.0.2.1:1", []byte(`{}`)), []byte(`{}`))
	require.ErrorIs(t, err, payonce.ErrWebhookForbidden)
	require.Contains(t, p.String(), "WebhookAllow:[10.0.0.0/8]")
	for _, s := range []string{fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg), fmt.Sprintf("%v %+v %#v", p, p, *p)} {
		require.NotContains(t, s, testSecret)
	}
}

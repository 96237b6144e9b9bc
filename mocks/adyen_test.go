package mocks_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/adyen"
)

type adyBundle = fakeBundle[*mocks.Adyen]

func adySetup(t *testing.T, opts mocks.AdyenOptions) *adyBundle {
	t.Helper()
	clock := mocks.NewManualClock(epoch)
	opts.Clock = clock.Now
	f := mocks.NewAdyen(opts)
	t.Cleanup(f.Close)
	c := &client{t: t, base: f.URL(), keyHeader: "Idempotency-Key", hc: f.Client(),
		auth: func(r *http.Request) { r.Header.Set("X-API-Key", f.APIKey()) }}
	return &adyBundle{f: f, clock: clock, c: c}
}

func adyPayment(f *mocks.Adyen, amount int64, method, ref string, manual bool) map[string]any {
	p := map[string]any{"amount": map[string]any{"currency": "EUR", "value": amount}, "reference": ref,
		"merchantAccount": f.MerchantAccount(), "shopperReference": "shopper-1", "shopperInteraction": "ContAuth",
		"recurringProcessingModel": "UnscheduledCardOnFile", "returnUrl": "https://shop.example/return",
		"paymentMethod": map[string]any{"type": "scheme", "storedPaymentMethodId": method},
		"metadata":      map[string]string{"payonce_op": ref}}
	if manual {
		p["additionalData"] = map[string]string{"manualCapture": "true"}
	}
	return p
}

func adyMod(f *mocks.Adyen, amount int64, ref string) map[string]any {
	m := map[string]any{"merchantAccount": f.MerchantAccount(), "reference": ref}
	if amount > 0 {
		m["amount"] = map[string]any{"currency": "EUR", "value": amount}
	}
	return m
}

// The endpoint's webhook settings of the tests: Adyen's hex HMAC key and
// Basic credentials.
const (
	testAdyHMAC = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
	testAdyUser = "ws_webhook_test"
	testAdyPass = "adyen-webhook-password-for-tests"
)

// adyHooks starts an Adyen fake delivering to a receiver that checks every
// item's hmacSignature and the Basic credentials (adyVerifier).
func adyHooks(t *testing.T, d mocks.WebhookDelivery) (*adyBundle, *hookReceiver) {
	t.Helper()
	rec := newHookReceiver(t, adyVerifier(testAdyHMAC, testAdyUser, testAdyPass))
	d.URL, d.Secret, d.Username, d.Password = rec.URL(), testAdyHMAC, testAdyUser, testAdyPass
	if d.RetryAfter == 0 {
		d.RetryAfter = time.Millisecond
	}
	return adySetup(t, mocks.AdyenOptions{Options: mocks.Options{Webhooks: d}}), rec
}

// adyVerifier checks a delivery as Adyen documents it, with the test's
// own code: Basic credentials, and every item (one or a batch) signed with
// base64(HMAC-SHA256(hex-decoded key, pspReference:originalReference:
// merchantAccountCode:merchantReference:value:currency:eventCode:success))
// (https://docs.adyen.com/development-resources/webhooks/verify-hmac-signatures;
// Adyen/adyen-go-api-library src/hmacvalidator).
func adyVerifier(hexKey, user, pass string) func(r *http.Request, body []byte) bool {
	key, err := hex.DecodeString(hexKey)
	if err != nil {
		panic(err)
	}
	return func(r *http.Request, body []byte) bool {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
			return false
		}
		var n mocks.AdyenNotification
		if json.Unmarshal(body, &n) != nil || n.Live != "false" || len(n.NotificationItems) == 0 {
			return false
		}
		for _, it := range n.Items() {
			data := strings.Join([]string{it.PspReference, it.OriginalReference, it.MerchantAccountCode, it.MerchantReference,
				strconv.FormatInt(it.Amount.Value, 10), it.Amount.Currency, it.EventCode, it.Success}, ":")
			m := hmac.New(sha256.New, key)
			m.Write([]byte(data))
			if !hmac.Equal([]byte(it.AdditionalData["hmacSignature"]), []byte(base64.StdEncoding.EncodeToString(m.Sum(nil)))) {
				return false
			}
		}
		return true
	}
}

// adyAdapter is the Adyen adapter configured for the test endpoint.
func adyAdapter(t *testing.T, f *mocks.Adyen) *adyen.Provider {
	p, err := adyen.New(adyen.Config{APIKey: f.APIKey(), MerchantAccount: f.MerchantAccount(), BaseURL: f.URL(),
		HMACKey: testAdyHMAC, WebhookUsername: testAdyUser, WebhookPassword: testAdyPass})
	require.NoError(t, err)
	return p
}

// parsed waits for f's webhooks and reads every delivery rec accepted with
// the adapter (signature and Basic auth checked again), in arrival order.
func parsed(t *testing.T, f *mocks.Adyen, rec *hookReceiver) []payonce.WebhookEvent {
	t.Helper()
	flush(t, f)
	p := adyAdapter(t, f)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []payonce.WebhookEvent
	for i, body := range rec.bodies {
		r := httptest.NewRequest(http.MethodPost, "/webhooks", bytes.NewReader(body))
		r.Header = rec.headers[i].Clone()
		evs, err := p.ParseWebhook(r, body)
		require.NoError(t, err)
		out = append(out, evs...)
	}
	return out
}

func TestAdyenPaymentLifecycle(t *testing.T) {
	t.Parallel()
	b, rec := adyHooks(t, mocks.WebhookDelivery{})
	r := b.c.post("/payments", adyPayment(b.f, 1000, mocks.AdyenMethodAuthorised, "op-1", true), "k1")
	pay := decode[map[string]any](t, r, 200)
	require.Equal(t, "Authorised", pay["resultCode"])
	require.Equal(t, "op-1", pay["merchantReference"])
	require.Equal(t, "k1", r.header.Get("Idempotency-Key"))
	psp := pay["pspReference"].(string)
	require.Len(t, psp, 16)

	// Captures, cancels, refunds answer 201 received; the outcome is in the
	// webhook.
	capture := decode[map[string]any](t, b.c.post("/payments/"+psp+"/captures", adyMod(b.f, 1000, "op-2"), "k2"), 201)
	require.Equal(t, "received", capture["status"])
	require.Equal(t, psp, capture["paymentPspReference"])
	over := decode[map[string]any](t, b.c.post("/payments/"+psp+"/refunds", adyMod(b.f, 5000, "op-3"), "k3"), 201)
	refund := decode[map[string]any](t, b.c.post("/payments/"+psp+"/refunds", adyMod(b.f, 400, "op-4"), "k4"), 201)
	cancel := decode[map[string]any](t, b.c.post("/payments/"+psp+"/cancels", adyMod(b.f, 0, "op-5"), "k5"), 201)

	evs := parsed(t, b.f, rec)
	type got struct {
		typ, ref string
		state    payonce.LookupState
	}
	var gots []got
	for _, ev := range evs {
		gots = append(gots, got{ev.Type, ev.Targets[0].ProviderRef, ev.Targets[0].State})
	}
	require.Equal(t, []got{
		{"AUTHORISATION", psp, payonce.LookupSucceeded},
		{"CAPTURE", capture["pspReference"].(string), payonce.LookupSucceeded},
		{"REFUND", over["pspReference"].(string), payonce.LookupFailed},
		{"REFUND", refund["pspReference"].(string), payonce.LookupSucceeded},
		{"CANCELLATION", cancel["pspReference"].(string), payonce.LookupFailed},
	}, gots)

	// The refund fails later at the scheme.
	require.True(t, b.f.FailRefund(refund["pspReference"].(string)))
	require.False(t, b.f.FailRefund(over["pspReference"].(string)), "a refund that failed cannot fail again")
	require.False(t, b.f.FailRefund(capture["pspReference"].(string)), "a capture is not a refund")
	evs = parsed(t, b.f, rec)
	require.Len(t, evs, 6)
	last := evs[len(evs)-1]
	require.Equal(t, "REFUND_FAILED", last.Type)
	require.Equal(t, refund["pspReference"], last.Targets[0].ProviderRef)
	require.True(t, last.Targets[0].Reversal)

	// So does the capture.
	require.True(t, b.f.FailCapture(capture["pspReference"].(string)))
	require.False(t, b.f.FailCapture(capture["pspReference"].(string)), "a failed capture cannot fail again")
	evs = parsed(t, b.f, rec)
	require.Len(t, evs, 7)
	last = evs[len(evs)-1]
	require.Equal(t, "CAPTURE_FAILED", last.Type)
	require.Equal(t, payonce.KindCapture, last.Targets[0].Kind)
	require.True(t, last.Targets[0].Reversal)
	require.Zero(t, rec.rejects())

	tr := b.f.Truth()
	require.Len(t, tr.Payments, 1)
	require.Equal(t, int64(0), tr.Payments[0].AmountCaptured, "the failed capture went back")
	require.Equal(t, int64(0), tr.Payments[0].AmountRefunded)
	require.Len(t, tr.Refunds, 2)
}

func TestAdyenDeclinesAndRedirect(t *testing.T) {
	t.Parallel()
	b, rec := adyHooks(t, mocks.WebhookDelivery{})
	pay := decode[map[string]any](t, b.c.post("/payments", adyPayment(b.f, 100, mocks.AdyenMethodNotEnoughBalance, "op-d", false), "kd"), 200)
	require.Equal(t, "Refused", pay["resultCode"])
	require.Equal(t, "12", pay["refusalReasonCode"])
	redirect := decode[map[string]any](t, b.c.post("/payments", adyPayment(b.f, 100, mocks.AdyenMethodRedirect, "op-r", false), "kr"), 200)
	require.Equal(t, "RedirectShopper", redirect["resultCode"])
	require.NotContains(t, redirect, "pspReference")
	evs := parsed(t, b.f, rec)
	require.Len(t, evs, 1, "no webhook for a redirect")
	require.Equal(t, payonce.LookupFailed, evs[0].Targets[0].State)

	e := decode[mocks.AdyenError](t, b.c.post("/payments/NOSUCHPAYMENT/captures", adyMod(b.f, 100, "x"), "kx"), 422)
	require.Equal(t, "167", e.ErrorCode)
	c := *b.c
	c.auth = func(r *http.Request) { r.Header.Set("X-API-Key", "AQEwrong") }
	e = decode[mocks.AdyenError](t, c.post("/payments", adyPayment(b.f, 100, mocks.AdyenMethodAuthorised, "op-a", false), "ka"), 401)
	require.Equal(t, "security", e.ErrorType)
}

func TestAdyenIdempotency(t *testing.T) {
	t.Parallel()
	b := adySetup(t, mocks.AdyenOptions{Options: mocks.Options{SlowFor: 300 * time.Millisecond}})
	body := adyPayment(b.f, 700, mocks.AdyenMethodAuthorised, "op-i", false)
	first := b.c.post("/payments", body, "ki")
	require.Equal(t, 200, first.status)
	// Same key, same body: the first answer, replayed.
	again := b.c.post("/payments", body, "ki")
	require.Equal(t, first.body, again.body)
	// Same key, another body: Adyen documents no error; the first answer.
	other := b.c.post("/payments", adyPayment(b.f, 999, mocks.AdyenMethodAuthorised, "op-other", false), "ki")
	require.Equal(t, first.body, other.body)
	tr := b.f.Truth()
	require.Len(t, tr.Payments, 1)
	require.Equal(t, 1, tr.Replays)
	require.Equal(t, 1, tr.KeyMismatch)

	// A stored error is replayed too.
	b.f.Script(mocks.Match{Method: "POST", Path: "/payments"}, mocks.FaultStored500)
	require.Equal(t, 500, b.c.post("/payments", adyPayment(b.f, 1, mocks.AdyenMethodAuthorised, "op-500", false), "k500").status)
	require.Equal(t, 500, b.c.post("/payments", adyPayment(b.f, 1, mocks.AdyenMethodAuthorised, "op-500", false), "k500").status)

	// While the first request runs: 409 errorCode 704.
	b.f.Script(mocks.Match{Method: "POST", Path: "/payments"}, mocks.FaultSlow)
	slow := adyPayment(b.f, 5, mocks.AdyenMethodAuthorised, "op-slow", false)
	done := holdKey(t, b.f, b.c, "/payments", slow, "kslow")
	e := decode[mocks.AdyenError](t, b.c.post("/payments", slow, "kslow"), 409)
	require.Equal(t, "704", e.ErrorCode)
	<-done
	require.Equal(t, 1, b.f.Truth().KeyInUse)

	// After KeyTTL the key is new again.
	b.clock.Advance(mocks.AdyenKeyTTL + time.Second)
	require.Equal(t, 200, b.c.post("/payments", body, "ki").status)
	require.Len(t, b.f.Truth().Payments, 3)
}

// TestAdyenReturnURLRequired: v71 requires returnUrl on /payments; without
// it the fake answers as Adyen does (422, errorCode 14_030), processes
// nothing and keeps nothing under the key, so the corrected request with
// the same key is processed.
func TestAdyenReturnURLRequired(t *testing.T) {
	t.Parallel()
	b := adySetup(t, mocks.AdyenOptions{})
	body := adyPayment(b.f, 100, mocks.AdyenMethodAuthorised, "op-ru", false)
	delete(body, "returnUrl")
	e := decode[mocks.AdyenError](t, b.c.post("/payments", body, "kru"), 422)
	require.Equal(t, mocks.AdyenError{Status: 422, ErrorCode: "14_030", Message: "Required field 'returnUrl' is not provided.",
		ErrorType: "validation", PspReference: e.PspReference}, e)
	require.Len(t, e.PspReference, 16)
	body["returnUrl"] = ""
	require.Equal(t, 422, b.c.post("/payments", body, "kru").status, "an empty returnUrl is none")
	require.Empty(t, b.f.Truth().Payments)

	body["returnUrl"] = "https://shop.example/return"
	pay := decode[map[string]any](t, b.c.post("/payments", body, "kru"), 200)
	require.Equal(t, "Authorised", pay["resultCode"])
}

// TestAdyenKeysPerCompany: every merchant account of the company shares one
// idempotency store. A key one account used answers another account's
// request with the first account's stored answer; with keys of their own,
// each account gets its own payment, modifies only its own, and its
// notifications name it.
func TestAdyenKeysPerCompany(t *testing.T) {
	t.Parallel()
	b, rec := adyHooks(t, mocks.WebhookDelivery{})
	other := "PayonceOtherMerchant"
	b2 := adySetup(t, mocks.AdyenOptions{MerchantAccounts: []string{other}})
	onOther := func(p map[string]any) map[string]any { p["merchantAccount"] = other; return p }

	first := b2.c.post("/payments", adyPayment(b2.f, 700, mocks.AdyenMethodAuthorised, "op-shared", false), "shared-key")
	require.Equal(t, 200, first.status)
	// The other account, same key, same order: the first account's answer.
	again := b2.c.post("/payments", onOther(adyPayment(b2.f, 700, mocks.AdyenMethodAuthorised, "op-shared", false)), "shared-key")
	require.Equal(t, first.body, again.body, "keys are stored at company level: the other account's request is answered with the first's")
	require.Len(t, b2.f.Truth().Payments, 1)
	// Its own key: its own payment.
	own := decode[map[string]any](t, b2.c.post("/payments", onOther(adyPayment(b2.f, 700, mocks.AdyenMethodAuthorised, "op-shared", false)), "other-key"), 200)
	require.Len(t, b2.f.Truth().Payments, 2)
	psp := own["pspReference"].(string)
	// Only its own account modifies it, and the answer names that account.
	e := decode[mocks.AdyenError](t, b2.c.post("/payments/"+psp+"/refunds", adyMod(b2.f, 100, "op-r"), "k-r1"), 403)
	require.Equal(t, "901", e.ErrorCode)
	refund := decode[map[string]any](t, b2.c.post("/payments/"+psp+"/refunds", onOther(adyMod(b2.f, 100, "op-r")), "k-r1"), 201)
	require.Equal(t, other, refund["merchantAccount"])
	// An account the company does not have is refused.
	e = decode[mocks.AdyenError](t, b.c.post("/payments", onOther(adyPayment(b.f, 700, mocks.AdyenMethodAuthorised, "op-x", false)), "k-x"), 403)
	require.Equal(t, "901", e.ErrorCode)

	// Notifications carry the payment's account.
	hooks := adySetup(t, mocks.AdyenOptions{
		Options: mocks.Options{
			Webhooks: mocks.WebhookDelivery{URL: rec.URL(),
				Secret: testAdyHMAC, Username: testAdyUser, Password: testAdyPass, RetryAfter: time.Millisecond},
		},
		MerchantAccounts: []string{other},
	})
	pay := decode[map[string]any](t, hooks.c.post("/payments", onOther(adyPayment(hooks.f, 300, mocks.AdyenMethodAuthorised, "op-n", false)), "k-n"), 200)
	decode[map[string]any](t, hooks.c.post("/payments/"+pay["pspReference"].(string)+"/refunds", onOther(adyMod(hooks.f, 300, "op-nr")), "k-nr"), 201)
	flush(t, hooks.f)
	var accounts []string
	for _, n := range events[mocks.AdyenNotification](t, rec) {
		accounts = append(accounts, n.Items()[0].MerchantAccountCode)
	}
	require.Equal(t, []string{other, other}, accounts)
}

// TestAdyenKeyInUse: errorCode 704 with the configured status (409 or 422),
// marked Transient-Error: true; nothing is stored for it, and the first
// request's answer follows.
func TestAdyenKeyInUse(t *testing.T) {
	t.Parallel()
	for _, status := range []int{0, http.StatusConflict, http.StatusUnprocessableEntity} {
		b := adySetup(t, mocks.AdyenOptions{Options: mocks.Options{SlowFor: 300 * time.Millisecond}, KeyInUseStatus: status})
		want := cmp.Or(status, http.StatusConflict)
		b.f.Script(mocks.Match{Method: "POST", Path: "/payments"}, mocks.FaultSlow)
		body := adyPayment(b.f, 5, mocks.AdyenMethodAuthorised, "op-slow", false)
		done := holdKey(t, b.f, b.c, "/payments", body, "kslow")
		r := b.c.post("/payments", body, "kslow")
		e := decode[mocks.AdyenError](t, r, want)
		require.Equal(t, mocks.AdyenError{Status: want, ErrorCode: "704", Message: "request already processed or in progress",
			ErrorType: "validation", PspReference: e.PspReference}, e)
		require.Equal(t, "true", r.header.Get("Transient-Error"))
		first := <-done
		require.Equal(t, 200, first.status)
		again := b.c.post("/payments", body, "kslow")
		require.Equal(t, first.body, again.body)
		require.Empty(t, again.header.Get("Transient-Error"))
		require.Len(t, b.f.Truth().Payments, 1)
	}
}

// TestAdyenTransientErrors: a 500 before processing is by default stored
// as the key's final answer, without Transient-Error; with TransientErrors
// it is marked Transient-Error: true and forgotten, so that the same key
// is processed as if it were the first request. A 500 after processing is
// never transient.
func TestAdyenTransientErrors(t *testing.T) {
	t.Parallel()
	post := mocks.Match{Method: "POST", Path: "/payments"}
	for _, transient := range []bool{false, true} {
		b := adySetup(t, mocks.AdyenOptions{TransientErrors: transient})
		body := adyPayment(b.f, 100, mocks.AdyenMethodAuthorised, "op-t", false)
		b.f.Script(post, mocks.FaultStored500)
		r := b.c.post("/payments", body, "kt")
		require.Equal(t, 500, r.status)
		again := b.c.post("/payments", body, "kt")
		if transient {
			require.Equal(t, "true", r.header.Get("Transient-Error"))
			require.Equal(t, 200, again.status, "a transient error is not kept: the same key is processed")
			require.Len(t, b.f.Truth().Payments, 1)
		} else {
			require.Empty(t, r.header.Get("Transient-Error"))
			require.Equal(t, 500, again.status, "a non-transient error is the key's final answer")
			require.Equal(t, r.body, again.body)
			require.Empty(t, b.f.Truth().Payments)
		}

		b.f.Script(post, mocks.FaultProcessed500)
		r = b.c.post("/payments", adyPayment(b.f, 100, mocks.AdyenMethodAuthorised, "op-p", false), "kp")
		require.Equal(t, 500, r.status)
		require.Empty(t, r.header.Get("Transient-Error"), "processed: never transient")
		require.Equal(t, r.body, b.c.post("/payments", adyPayment(b.f, 100, mocks.AdyenMethodAuthorised, "op-p", false), "kp").body)
	}
}

// TestAdyenWebhooksUnderFaults: every event arrives, signed and with its
// credentials, through failed attempts and duplicates; each delivery holds
// one item, and the items batched in one body verify as well.
func TestAdyenWebhooksUnderFaults(t *testing.T) {
	t.Parallel()
	b, rec := adyHooks(t, mocks.WebhookDelivery{FailRate: 0.5, DuplicateRate: 0.3, MaxAttempts: 40})
	var psps []string
	for i, method := range []string{mocks.AdyenMethodAuthorised, mocks.AdyenMethodPending, mocks.AdyenMethodRefused} {
		ref := fmt.Sprintf("op-f%d", i)
		pay := decode[map[string]any](t, b.c.post("/payments", adyPayment(b.f, 500, method, ref, false), "kf"+ref), 200)
		psps = append(psps, pay["pspReference"].(string))
	}
	refund := decode[map[string]any](t, b.c.post("/payments/"+psps[0]+"/refunds", adyMod(b.f, 200, "op-fr"), "kfr"), 201)
	flush(t, b.f)

	st := b.f.WebhookStats()
	require.Equal(t, 4, st.Queued)
	require.Zero(t, st.GaveUp)
	require.Positive(t, st.Failed)
	require.Equal(t, st.Queued+st.Duplicated, st.Delivered)
	require.Zero(t, rec.rejects(), "every delivery carries valid signatures and the Basic credentials")

	seen := map[string]bool{}
	var items []mocks.AdyenNotificationItem
	for i, n := range events[mocks.AdyenNotification](t, rec) {
		require.Len(t, n.NotificationItems, 1, "one item per delivery")
		it := n.Items()[0]
		require.Equal(t, b.f.MerchantAccount(), it.MerchantAccountCode)
		if it.EventCode == "AUTHORISATION" {
			// The payment's metadata, echoed as Adyen does.
			require.Equal(t, it.MerchantReference, it.AdditionalData["metadata.payonce_op"])
		} else {
			require.NotContains(t, it.AdditionalData, "metadata.payonce_op", "a modification echoes no metadata")
		}
		require.Equal(t, "application/json", rec.headers[i].Get("Content-Type"))
		require.NotEmpty(t, rec.headers[i].Get("User-Agent"))
		if key := it.PspReference + ":" + it.EventCode; !seen[key] {
			seen[key] = true
			items = append(items, it)
		}
	}
	require.Equal(t, map[string]bool{psps[0] + ":AUTHORISATION": true, psps[1] + ":AUTHORISATION": true,
		psps[2] + ":AUTHORISATION": true, refund["pspReference"].(string) + ":REFUND": true}, seen)

	// Adyen may batch: the same items in one body verify item by item.
	batch, err := json.Marshal(mocks.NewAdyenNotification(items...))
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodPost, "/webhooks", bytes.NewReader(batch))
	r.SetBasicAuth(testAdyUser, testAdyPass)
	require.True(t, adyVerifier(testAdyHMAC, testAdyUser, testAdyPass)(r, batch))
	evs, err := adyAdapter(t, b.f).ParseWebhook(r, batch)
	require.NoError(t, err)
	require.Len(t, evs, len(items))
}

// TestAdyenWebhookRefusedIsRetried: a delivery the receiver refuses is
// attempted again, the same body, until it is accepted.
func TestAdyenWebhookRefusedIsRetried(t *testing.T) {
	t.Parallel()
	verify := adyVerifier(testAdyHMAC, testAdyUser, testAdyPass)
	var mu sync.Mutex
	var attempts [][]byte
	rec := newHookReceiver(t, func(r *http.Request, body []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, body)
		return len(attempts) > 1 && verify(r, body)
	})
	b := adySetup(t, mocks.AdyenOptions{
		Options: mocks.Options{
			Webhooks: mocks.WebhookDelivery{URL: rec.URL(), Secret: testAdyHMAC,
				Username: testAdyUser, Password: testAdyPass, RetryAfter: time.Millisecond},
		},
	})
	decode[map[string]any](t, b.c.post("/payments", adyPayment(b.f, 100, mocks.AdyenMethodAuthorised, "op-w", false), "kw"), 200)
	flush(t, b.f)
	require.Equal(t, mocks.WebhookStats{Queued: 1, Delivered: 1, Failed: 1}, b.f.WebhookStats())
	require.Equal(t, 1, rec.rejects())
	mu.Lock()
	require.Len(t, attempts, 2)
	require.Equal(t, attempts[0], attempts[1], "a retry is the same signed body")
	mu.Unlock()
	evs := parsed(t, b.f, rec)
	require.Len(t, evs, 1)
	require.Equal(t, "AUTHORISATION", evs[0].Type)
}

// TestAdyenWebhooksOff: without Webhooks nothing is queued.
func TestAdyenWebhooksOff(t *testing.T) {
	t.Parallel()
	b := adySetup(t, mocks.AdyenOptions{})
	decode[map[string]any](t, b.c.post("/payments", adyPayment(b.f, 100, mocks.AdyenMethodAuthorised, "op-n", false), "kn"), 200)
	require.NoError(t, b.f.FlushWebhooks(context.Background()))
	require.Equal(t, mocks.WebhookStats{}, b.f.WebhookStats())
}

func TestAdyenOptionsValidate(t *testing.T) {
	t.Parallel()
	hooks := func(mod func(*mocks.WebhookDelivery)) mocks.AdyenOptions {
		d := mocks.WebhookDelivery{URL: "http://127.0.0.1:9/webhooks", Secret: testAdyHMAC, Username: testAdyUser, Password: testAdyPass}
		mod(&d)
		return mocks.AdyenOptions{Options: mocks.Options{Webhooks: d}}
	}
	for _, tc := range []struct {
		name string
		opts mocks.AdyenOptions
		want string
	}{
		{"key not hex", hooks(func(d *mocks.WebhookDelivery) { d.Secret = "zz" }), "Webhooks.Secret is not a hex HMAC key"},
		{"no key", hooks(func(d *mocks.WebhookDelivery) { d.Secret = "" }), "Webhooks.Secret is not a hex HMAC key"},
		{"key not hex, webhooks off", mocks.AdyenOptions{Options: mocks.Options{Webhooks: mocks.WebhookDelivery{Secret: "not-hex"}}}, "hex"},
		{"user without password", hooks(func(d *mocks.WebhookDelivery) { d.Password = "" }), "set both or neither"},
		{"colon in user", hooks(func(d *mocks.WebhookDelivery) { d.Username = "a:b" }), "Username contains ':'"},
		{"authorization header", hooks(func(d *mocks.WebhookDelivery) { d.Username, d.Password, d.Authorization = "", "", "Bearer x" }), "only HTTP Basic"},
		{"not loopback", hooks(func(d *mocks.WebhookDelivery) { d.URL = "https://example.com/webhooks" }), "loopback"},
		{"key ttl", mocks.AdyenOptions{Options: mocks.Options{KeyTTL: -1}}, "KeyTTL"},
		{"key in use status", mocks.AdyenOptions{KeyInUseStatus: http.StatusTooManyRequests}, "KeyInUseStatus is 429; Adyen answers errorCode 704 with 409 or 422"},
		{"empty merchant account", mocks.AdyenOptions{MerchantAccounts: []string{"A", ""}}, "MerchantAccounts[1]"},
		{"merchant account with space", mocks.AdyenOptions{MerchantAccounts: []string{"A B"}}, "MerchantAccounts[0]"},
	} {
		err := tc.opts.Validate()
		require.ErrorContains(t, err, tc.want, tc.name)
		require.ErrorContains(t, err, "AdyenOptions", tc.name)
		require.Panics(t, func() { mocks.NewAdyenHandler(tc.opts) }, tc.name)
	}
	require.NoError(t, mocks.AdyenOptions{}.Validate())
	require.NoError(t, mocks.AdyenOptions{KeyInUseStatus: http.StatusUnprocessableEntity, MerchantAccounts: []string{"Other"}}.Validate())
	require.NoError(t, hooks(func(*mocks.WebhookDelivery) {}).Validate())
	require.NoError(t, hooks(func(d *mocks.WebhookDelivery) { d.Username, d.Password = "", "" }).Validate(), "Basic auth is optional")
}

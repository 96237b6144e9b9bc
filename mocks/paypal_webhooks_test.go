package mocks_test

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

// ppVerifier checks a delivery as PayPal documents the offline check,
// written here with crypto/x509 directly: the certificate at
// PAYPAL-CERT-URL (only from the fake's own URL) must chain to the fake's
// WebhookRoots and name messageverificationcerts*.paypal.com, and
// PAYPAL-TRANSMISSION-SIG must be its SHA256withRSA signature of
// transmissionId|transmissionTime|webhookId|crc32(body).
func ppVerifier(f *atomic.Pointer[mocks.PayPal]) func(r *http.Request, body []byte) bool {
	return func(r *http.Request, body []byte) bool {
		fake := f.Load()
		if fake == nil || r.Header.Get("PAYPAL-AUTH-ALGO") != "SHA256withRSA" {
			return false
		}
		certURL := r.Header.Get("PAYPAL-CERT-URL")
		if !strings.HasPrefix(certURL, fake.URL()+"/v1/notifications/certs/CERT-") {
			return false
		}
		resp, err := http.Get(certURL)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			return false
		}
		var chain []*x509.Certificate
		for block, rest := pem.Decode(raw); block != nil; block, rest = pem.Decode(rest) {
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return false
			}
			chain = append(chain, c)
		}
		if len(chain) == 0 {
			return false
		}
		inter := x509.NewCertPool()
		for _, c := range chain[1:] {
			inter.AddCert(c)
		}
		leaf := chain[0]
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: fake.WebhookRoots(), Intermediates: inter,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			return false
		}
		cn := leaf.Subject.CommonName
		if !strings.HasPrefix(cn, "messageverificationcerts") || !strings.HasSuffix(cn, ".paypal.com") {
			return false
		}
		signed := r.Header.Get("PAYPAL-TRANSMISSION-ID") + "|" + r.Header.Get("PAYPAL-TRANSMISSION-TIME") + "|" +
			fake.WebhookID() + "|" + strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)
		sig, err := base64.StdEncoding.DecodeString(r.Header.Get("PAYPAL-TRANSMISSION-SIG"))
		if err != nil {
			return false
		}
		pub, ok := leaf.PublicKey.(*rsa.PublicKey)
		if !ok {
			return false
		}
		sum := sha256.Sum256([]byte(signed))
		return rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) == nil
	}
}

func ppHooks(t *testing.T, opts mocks.PayPalOptions) (*ppBundle, *hookReceiver) {
	t.Helper()
	var fake atomic.Pointer[mocks.PayPal]
	rec := newHookReceiver(t, ppVerifier(&fake))
	opts.Webhooks.URL, opts.Webhooks.RetryAfter = rec.URL(), time.Millisecond
	b := ppSetup(t, opts)
	fake.Store(b.f)
	return b, rec
}

func ppTypes(evs []mocks.PayPalEvent) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.EventType)
	}
	return out
}

func TestPayPalWebhooksSignedAndVerifiable(t *testing.T) {
	t.Parallel()
	b, rec := ppHooks(t, mocks.PayPalOptions{})
	o := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "10.00", "USD", "op", "K", mocks.PayPalVaultApproved), "K"), 201)
	capID := o.PurchaseUnits[0].Payments.Captures[0].ID
	decode[mocks.PayPalRefund](t, b.c.post("/v2/payments/captures/"+capID+"/refund",
		map[string]any{"amount": map[string]string{"currency_code": "USD", "value": "1.00"}, "custom_id": "rop"}, "R"), 201)
	a := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("AUTHORIZE", "5.00", "USD", "auth", "A", mocks.PayPalVaultApproved), "A"), 201)
	decode[mocks.PayPalAuthorization](t, b.c.post("/v2/payments/authorizations/"+a.PurchaseUnits[0].Payments.Authorizations[0].ID+"/void", nil, "V"), 200)
	decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "5.00", "USD", "dec", "D", mocks.PayPalVaultDeclined), "D"), 201)
	p := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "5.00", "USD", "pend", "P", mocks.PayPalVaultPending), "P"), 201)
	pendID := p.PurchaseUnits[0].Payments.Captures[0].ID
	require.NoError(t, b.f.CompletePending(pendID))
	_, err := b.f.ReverseCapture(pendID)
	require.NoError(t, err)
	flush(t, b.f)

	require.Zero(t, rec.rejects(), "every delivery verifies with the fake's root")
	evs := events[mocks.PayPalEvent](t, rec)
	require.Equal(t, []string{
		"PAYMENT.CAPTURE.COMPLETED", "CHECKOUT.ORDER.COMPLETED", "PAYMENT.CAPTURE.REFUNDED",
		"PAYMENT.AUTHORIZATION.CREATED", "CHECKOUT.ORDER.COMPLETED", "PAYMENT.AUTHORIZATION.VOIDED",
		"PAYMENT.CAPTURE.DECLINED", "CHECKOUT.ORDER.COMPLETED",
		"PAYMENT.CAPTURE.PENDING", "CHECKOUT.ORDER.COMPLETED", "PAYMENT.CAPTURE.COMPLETED", "PAYMENT.CAPTURE.REVERSED",
	}, ppTypes(evs))
	first := evs[0]
	require.Regexp(t, `^WH-[0-9A-Z]{17}-[0-9A-Z]{17}$`, first.ID)
	require.Equal(t, "capture", first.ResourceType)
	require.Equal(t, "1.0", first.EventVersion)
	var c mocks.PayPalCapture
	require.NoError(t, json.Unmarshal(first.Resource, &c))
	require.Equal(t, capID, c.ID)
	require.Equal(t, "op", c.CustomID)
	var rev mocks.PayPalRefund
	require.NoError(t, json.Unmarshal(evs[len(evs)-1].Resource, &rev))
	require.Equal(t, "refund", evs[len(evs)-1].ResourceType)
	require.Equal(t, "/v2/payments/captures/"+pendID, strings.TrimPrefix(rev.Links[1].Href, "https://api.sandbox.paypal.com"))

	// The verification API: SUCCESS for the delivery as sent, FAILURE for
	// a changed event, another webhook id or a wrong signature.
	rec.mu.Lock()
	body, hd := rec.bodies[0], rec.headers[0]
	rec.mu.Unlock()
	verify := func(change func(map[string]any)) string {
		req := map[string]any{"auth_algo": hd.Get("PAYPAL-AUTH-ALGO"), "cert_url": hd.Get("PAYPAL-CERT-URL"),
			"transmission_id": hd.Get("PAYPAL-TRANSMISSION-ID"), "transmission_sig": hd.Get("PAYPAL-TRANSMISSION-SIG"),
			"transmission_time": hd.Get("PAYPAL-TRANSMISSION-TIME"), "webhook_id": b.f.WebhookID(), "webhook_event": json.RawMessage(body)}
		change(req)
		return decode[map[string]string](t, b.c.post("/v1/notifications/verify-webhook-signature", req, ""), 200)["verification_status"]
	}
	require.Equal(t, "SUCCESS", verify(func(map[string]any) {}))
	require.Equal(t, "SUCCESS", verify(func(m map[string]any) {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(body, &ev))
		m["webhook_event"] = ev // re-encoded: other key order, same event
	}))
	require.Equal(t, "FAILURE", verify(func(m map[string]any) { m["webhook_id"] = "OTHER" }))
	require.Equal(t, "FAILURE", verify(func(m map[string]any) { m["transmission_id"] = "x" }))
	require.Equal(t, "FAILURE", verify(func(m map[string]any) {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(body, &ev))
		ev["event_type"] = "PAYMENT.CAPTURE.REFUNDED"
		m["webhook_event"] = ev
	}))
	ppIssue(t, b.c.post("/v1/notifications/verify-webhook-signature", map[string]any{"auth_algo": "SHA256withRSA"}, ""),
		400, "INVALID_REQUEST", "MISSING_REQUIRED_PARAMETER")
}

// A forged delivery fails the test's own verification: the check above
// is not vacuous.
func TestPayPalVerifierRefusesForgeries(t *testing.T) {
	t.Parallel()
	b, rec := ppHooks(t, mocks.PayPalOptions{})
	decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "10.00", "USD", "op", "K", mocks.PayPalVaultApproved), "K"), 201)
	flush(t, b.f)
	rec.mu.Lock()
	body, hd := rec.bodies[0], rec.headers[0].Clone()
	rec.mu.Unlock()
	var f atomic.Pointer[mocks.PayPal]
	f.Store(b.f)
	v := ppVerifier(&f)
	req := func(h http.Header) *http.Request { return &http.Request{Header: h} }
	require.True(t, v(req(hd), body))
	require.False(t, v(req(hd), append([]byte(" "), body...)), "a changed body")
	other := hd.Clone()
	other.Set("PAYPAL-CERT-URL", "https://example.com/v1/notifications/certs/CERT-x")
	require.False(t, v(req(other), body), "a certificate from elsewhere")
	other = hd.Clone()
	other.Set("PAYPAL-TRANSMISSION-TIME", time.Now().UTC().Format(time.RFC3339)+"x")
	require.False(t, v(req(other), body), "another transmission time")

	// Another fake's root does not vouch for this fake's certificate.
	other2 := mocks.NewPayPal(mocks.PayPalOptions{Options: mocks.Options{Seed: 7}})
	t.Cleanup(other2.Close)
	resp, err := http.Get(hd.Get("PAYPAL-CERT-URL"))
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	block, rest := pem.Decode(raw)
	leaf, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	require.Equal(t, "messageverificationcerts.paypal.com", leaf.Subject.CommonName)
	require.Equal(t, []string{"PayPal, Inc."}, leaf.Subject.Organization)
	inter := x509.NewCertPool()
	ib, _ := pem.Decode(rest)
	ic, err := x509.ParseCertificate(ib.Bytes)
	require.NoError(t, err)
	inter.AddCert(ic)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: other2.WebhookRoots(), Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	require.Error(t, err)
	require.Equal(t, 404, b.c.get("/v1/notifications/certs/CERT-nope").status)
	require.Equal(t, strings.TrimPrefix(b.f.URL(), "http://"), b.f.CertHost())
}

package paypal_test

import (
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/paypal"
)

const pingEvent = `{"id":"WH-9UG43882HX7271132-6E0871324L7949614","create_time":"2026-12-05T00:59:58Z","resource_type":"checkout-order",` +
	`"event_type":"CHECKOUT.ORDER.APPROVED","resource":{"id":"5O190127TN364715T","status":"APPROVED"}}`

// mustRefuse asserts err is an authentication failure whose text says want.
func mustRefuse(t *testing.T, evs []payonce.WebhookEvent, err error, want string) {
	t.Helper()
	if err == nil || evs != nil {
		t.Fatalf("delivery accepted (%v), want refused: %s", evs, want)
	}
	if !errors.Is(err, payonce.ErrWebhookUnauthenticated) {
		t.Fatalf("error %v does not wrap ErrWebhookUnauthenticated", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

func TestWebhookOfflineAcceptsPayPalsSignature(t *testing.T) {
	f := newWebhookFixture(t, nil)
	evs, err := f.parse(f.signed(pingEvent))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].ID != "WH-9UG43882HX7271132-6E0871324L7949614" || evs[0].Type != "CHECKOUT.ORDER.APPROVED" ||
		!evs[0].OccurredAt.Equal(time.Date(2026, 12, 5, 0, 59, 58, 0, time.UTC)) {
		t.Fatalf("events %+v", evs)
	}
	if len(evs[0].Targets) != 0 {
		t.Fatalf("an event type the adapter does not read has targets: %+v", evs[0].Targets)
	}
	// The certificate is cached by URL: a second delivery fetches nothing.
	if _, err := f.parse(f.signed(pingEvent)); err != nil {
		t.Fatal(err)
	}
	if n := f.srv.hits.Load(); n != 1 {
		t.Fatalf("certificate fetched %d times, want 1", n)
	}
}

func TestWebhookOfflineRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(f *webhookFixture, d *delivery)
		want string
	}{
		{"tampered body", func(f *webhookFixture, d *delivery) {
			d.sig = signDelivery(d.key, d.id, d.at, d.webhookID, d.body)
			d.body = []byte(strings.Replace(string(d.body), "APPROVED", "COMPLETED", 1))
		}, "does not verify"},
		{"wrong webhook id", func(f *webhookFixture, d *delivery) { d.webhookID = "WH-OTHER" }, "does not verify"},
		{"changed transmission id", func(f *webhookFixture, d *delivery) {
			d.sig = signDelivery(d.key, d.id, d.at, d.webhookID, d.body)
			d.id = "another-id"
		}, "does not verify"},
		{"signed by another key", func(f *webhookFixture, d *delivery) { d.key = testKey(t, 3) }, "does not verify"},
		{"garbage signature", func(f *webhookFixture, d *delivery) { d.sig = "AAAA" }, "does not verify"},
		{"signature not base64", func(f *webhookFixture, d *delivery) { d.sig = "!!!" }, "not base64"},
		{"SHA1withRSA", func(f *webhookFixture, d *delivery) { d.algo = "SHA1withRSA" }, "only SHA256withRSA"},
		{"no algorithm", func(f *webhookFixture, d *delivery) { d.algo = "" }, "no PAYPAL-AUTH-ALGO"},
		{"no transmission id", func(f *webhookFixture, d *delivery) { d.id = "" }, "no PAYPAL-TRANSMISSION-ID"},
		{"pipe in transmission id", func(f *webhookFixture, d *delivery) { d.id = "a|b" }, "'|'"},
		{"no time", func(f *webhookFixture, d *delivery) { d.at = "" }, "no PAYPAL-TRANSMISSION-TIME"},
		{"time not RFC 3339", func(f *webhookFixture, d *delivery) { d.at = "Sat, 05 Dec 2026 01:00:00 GMT" }, "not an RFC 3339 time"},
		{"stale transmission", func(f *webhookFixture, d *delivery) {
			d.at = f.now.Add(-paypal.MaxWebhookTransmissionAge - time.Minute).Format(time.RFC3339)
		}, "old, more than"},
		{"no cert url", func(f *webhookFixture, d *delivery) { d.certURL = "" }, "no PAYPAL-CERT-URL"},
		{"cert url on another host", func(f *webhookFixture, d *delivery) {
			other := newCertServer(t)
			d.certURL = other.serve("/v1/notifications/certs/CERT-1", f.pki.leafPEM)
		}, "not one of paypal.Config.WebhookCertHosts"},
		{"cert url with user info", func(f *webhookFixture, d *delivery) {
			d.certURL = strings.Replace(d.certURL, "http://", "http://user:pw@", 1)
		}, "user info"},
		{"cert url not absolute", func(f *webhookFixture, d *delivery) { d.certURL = "/v1/notifications/certs/CERT-1" }, "not an absolute URL"},
		{"cert url ftp", func(f *webhookFixture, d *delivery) { d.certURL = strings.Replace(d.certURL, "http://", "ftp://", 1) }, "scheme"},
		{"cert not found", func(f *webhookFixture, d *delivery) { d.certURL = f.srv.URL + "/v1/notifications/certs/CERT-missing" }, "HTTP 404"},
		{"not a certificate", func(f *webhookFixture, d *delivery) {
			d.certURL = f.srv.serve("/v1/notifications/certs/CERT-junk", []byte("hello"))
		}, "holds no certificate"},
		{"cert file too large", func(f *webhookFixture, d *delivery) {
			d.certURL = f.srv.serve("/v1/notifications/certs/CERT-big", append(f.pki.leafPEM, make([]byte, 70<<10)...))
		}, "more than 65536 bytes"},
		{"self-signed in PayPal's name", func(f *webhookFixture, d *delivery) {
			k := testKey(t, 3)
			self := issue(t, leafTemplate(testSubject), k, nil)
			d.certURL, d.key = f.srv.serve("/v1/notifications/certs/CERT-self", pemOf(self)), k
		}, "does not chain to a trusted root"},
		{"chain missing its intermediate", func(f *webhookFixture, d *delivery) {
			leaf := issue(t, leafTemplate(testSubject), f.pki.leafKey, &f.pki.inter)
			d.certURL = f.srv.serve("/v1/notifications/certs/CERT-nointer", pemOf(leaf))
		}, "does not chain to a trusted root"},
		{"wrong subject", func(f *webhookFixture, d *delivery) {
			leaf := issue(t, leafTemplate("evil.example.com"), f.pki.leafKey, &f.pki.inter)
			d.certURL = f.srv.serve("/v1/notifications/certs/CERT-evil", pemOf(leaf, f.pki.inter.cert))
		}, "not PayPal's webhook signing certificate"},
		{"other paypal.com name", func(f *webhookFixture, d *delivery) {
			leaf := issue(t, leafTemplate("www.paypal.com"), f.pki.leafKey, &f.pki.inter)
			d.certURL = f.srv.serve("/v1/notifications/certs/CERT-www", pemOf(leaf, f.pki.inter.cert))
		}, "not PayPal's webhook signing certificate"},
		{"paypal.com lookalike", func(f *webhookFixture, d *delivery) {
			leaf := issue(t, leafTemplate("messageverificationcerts.paypal.com.evil.example"), f.pki.leafKey, &f.pki.inter)
			d.certURL = f.srv.serve("/v1/notifications/certs/CERT-look", pemOf(leaf, f.pki.inter.cert))
		}, "not PayPal's webhook signing certificate"},
		{"leaf for code signing only", func(f *webhookFixture, d *delivery) {
			tmpl := leafTemplate(testSubject)
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}
			leaf := issue(t, tmpl, f.pki.leafKey, &f.pki.inter)
			d.certURL = f.srv.serve("/v1/notifications/certs/CERT-code", pemOf(leaf, f.pki.inter.cert))
		}, "not valid for TLS server or client use"},
		{"expired leaf", func(f *webhookFixture, d *delivery) {
			tmpl := leafTemplate(testSubject)
			tmpl.NotBefore, tmpl.NotAfter = whNow.Add(-48*time.Hour), whNow.Add(-time.Hour)
			leaf := issue(t, tmpl, f.pki.leafKey, &f.pki.inter)
			d.certURL = f.srv.serve("/v1/notifications/certs/CERT-old", pemOf(leaf, f.pki.inter.cert))
		}, "expired or not yet valid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newWebhookFixture(t, nil)
			d := f.signed(pingEvent)
			tc.mod(f, &d)
			evs, err := f.parse(d)
			mustRefuse(t, evs, err, tc.want)
		})
	}
}

// A delivery whose cert URL is refused costs no request: the host check
// comes before any fetch.
func TestWebhookCertURLOnAnotherHostIsNeverFetched(t *testing.T) {
	f := newWebhookFixture(t, nil)
	other := newCertServer(t)
	d := f.signed(pingEvent)
	d.certURL = other.serve("/v1/notifications/certs/CERT-1", f.pki.leafPEM)
	_, err := f.parse(d)
	mustRefuse(t, nil, err, "WebhookCertHosts")
	if other.hits.Load() != 0 || f.srv.hits.Load() != 0 {
		t.Fatalf("fetched: other %d, own %d", other.hits.Load(), f.srv.hits.Load())
	}
}

// http is allowed only for a loopback host; a non-loopback host listed in
// WebhookCertHosts must be https.
func TestWebhookCertURLPlainHTTPOnlyOnLoopback(t *testing.T) {
	f := newWebhookFixture(t, func(c *paypal.Config) { c.WebhookCertHosts = []string{"api.paypal.com"} })
	d := f.signed(pingEvent)
	d.certURL = "http://api.paypal.com/v1/notifications/certs/CERT-1"
	_, err := f.parse(d)
	mustRefuse(t, nil, err, "http is allowed only for a loopback host")
}

// Without WebhookCertHosts, only PayPal's API hosts may be named.
func TestWebhookDefaultCertHosts(t *testing.T) {
	f := newWebhookFixture(t, func(c *paypal.Config) { c.WebhookCertHosts = nil })
	_, err := f.parse(f.signed(pingEvent))
	mustRefuse(t, nil, err, "api.paypal.com")
	if f.srv.hits.Load() != 0 {
		t.Fatal("fetched from a loopback host that is not listed")
	}
}

func TestWebhookWithoutWebhookIDRefusesEverything(t *testing.T) {
	f := newWebhookFixture(t, func(c *paypal.Config) { c.WebhookID = "" })
	_, err := f.parse(f.signed(pingEvent))
	mustRefuse(t, nil, err, "paypal.Config.WebhookID")
}

// A transmission as old as PayPal's retries run is accepted; the bound is
// on the transmission time, not on the clock of the test.
func TestWebhookTransmissionAgeBound(t *testing.T) {
	f := newWebhookFixture(t, nil)
	d := f.signed(pingEvent)
	d.at = f.now.Add(-72 * time.Hour).Format(time.RFC3339)
	if _, err := f.parse(d); err != nil {
		t.Fatalf("a 3-day-old retry refused: %v", err)
	}
	*f.now = f.now.Add(13 * time.Hour)
	_, err := f.parse(d)
	mustRefuse(t, nil, err, "a replay")
}

// The certificate expires: the cached file is verified again at every use.
func TestWebhookCachedCertificateExpires(t *testing.T) {
	f := newWebhookFixture(t, nil)
	if _, err := f.parse(f.signed(pingEvent)); err != nil {
		t.Fatal(err)
	}
	*f.now = f.now.Add(366 * 24 * time.Hour)
	d := f.signed(pingEvent)
	_, err := f.parse(d)
	mustRefuse(t, nil, err, "expired")
}

// The cache holds a bounded number of files; an evicted one is fetched
// again.
func TestWebhookCertCacheIsBounded(t *testing.T) {
	f := newWebhookFixture(t, nil)
	for i := range 20 {
		d := f.signed(pingEvent)
		d.certURL = f.srv.serve("/v1/notifications/certs/CERT-"+string(rune('a'+i)), f.pki.leafPEM)
		if _, err := f.parse(d); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.srv.hits.Load(); n != 20 {
		t.Fatalf("%d fetches, want 20", n)
	}
	// The first URL was evicted (16 are kept), the last is cached.
	d := f.signed(pingEvent)
	d.certURL = f.srv.URL + "/v1/notifications/certs/CERT-a"
	if _, err := f.parse(d); err != nil {
		t.Fatal(err)
	}
	d.certURL = f.srv.URL + "/v1/notifications/certs/CERT-t"
	if _, err := f.parse(d); err != nil {
		t.Fatal(err)
	}
	if n := f.srv.hits.Load(); n != 21 {
		t.Fatalf("%d fetches, want 21", n)
	}
}

// A redirect from the listed host is not followed.
func TestWebhookCertFetchFollowsNoRedirect(t *testing.T) {
	other := newCertServer(t)
	target := other.serve("/cert", thePKI(t).leafPEM)
	var redirector *httptest.Server
	redirector = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusFound)
	}))
	t.Cleanup(redirector.Close)
	f := newWebhookFixture(t, func(c *paypal.Config) {
		c.WebhookCertHosts = []string{strings.TrimPrefix(redirector.URL, "http://")}
	})
	d := f.signed(pingEvent)
	d.certURL = redirector.URL + "/v1/notifications/certs/CERT-1"
	_, err := f.parse(d)
	mustRefuse(t, nil, err, "HTTP 302")
	if other.hits.Load() != 0 {
		t.Fatal("the redirect was followed")
	}
}

// A header may name an allowed host with a port only when listed so.
func TestWebhookCertHostPortMustMatch(t *testing.T) {
	f := newWebhookFixture(t, func(c *paypal.Config) { c.WebhookCertHosts = []string{"127.0.0.1:1"} })
	_, err := f.parse(f.signed(pingEvent))
	mustRefuse(t, nil, err, "WebhookCertHosts")
}

func TestWebhookUnknownVerificationModeIsRefusedByNew(t *testing.T) {
	_, err := paypal.New(paypal.Config{ClientID: "id", ClientSecret: "secret", WebhookVerification: "none"})
	if err == nil || !strings.Contains(err.Error(), "WebhookVerification") {
		t.Fatalf("New accepted an unknown verification mode: %v", err)
	}
}

// The certificate is fetched over https through Config.HTTPClient (here
// the TLS test server's client, which trusts its certificate).
func TestWebhookCertFetchedOverHTTPSThroughHTTPClient(t *testing.T) {
	k := thePKI(t)
	var hits atomic.Int64
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write(k.leafPEM)
	}))
	t.Cleanup(tlsSrv.Close)
	f := newWebhookFixture(t, func(c *paypal.Config) {
		c.WebhookCertHosts = []string{strings.TrimPrefix(tlsSrv.URL, "https://")}
		c.HTTPClient = tlsSrv.Client()
	})
	d := f.signed(pingEvent)
	d.certURL = tlsSrv.URL + "/v1/notifications/certs/CERT-tls"
	_, err := f.parse(d)
	require.NoError(t, err)
	require.Equal(t, int64(1), hits.Load())
}

package paypal_test

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"hash/crc32"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/paypal"
)

// A test PKI of PayPal's shape: a root, an intermediate, and a leaf with
// the subject messageverificationcerts.paypal.com, all generated once per
// test binary (RSA key generation is slow).

const (
	testWebhookID = "WH-1TEST00000000000"
	testSubject   = "messageverificationcerts.paypal.com"
)

var whNow = time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)

type testCA struct {
	cert *x509.Certificate
	key  *rsa.PrivateKey
}

type testPKI struct {
	root, inter testCA
	// leafKey signs deliveries; leafPEM is the file served at the cert
	// URL: the leaf, then the intermediate.
	leafKey *rsa.PrivateKey
	leafPEM []byte
	roots   *x509.CertPool
}

var (
	pkiOnce sync.Once
	pki     testPKI
	keys    []*rsa.PrivateKey
)

// testKey returns the i-th test RSA key (generated once).
func testKey(t testing.TB, i int) *rsa.PrivateKey {
	t.Helper()
	for len(keys) <= i {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return keys[i]
}

var serial atomic.Int64

// issue makes a certificate for key under parent (nil: self-signed).
func issue(t testing.TB, tmpl *x509.Certificate, key *rsa.PrivateKey, parent *testCA) *x509.Certificate {
	t.Helper()
	tmpl.SerialNumber = big.NewInt(serial.Add(1))
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore = whNow.Add(-60 * 24 * time.Hour)
	}
	if tmpl.NotAfter.IsZero() {
		tmpl.NotAfter = whNow.Add(365 * 24 * time.Hour)
	}
	signer, signerCert := key, tmpl
	if parent != nil {
		signer, signerCert = parent.key, parent.cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func caTemplate(cn string) *x509.Certificate {
	return &x509.Certificate{Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
}

// leafTemplate is a leaf as a WebPKI CA issues it: TLS server and client
// use.
func leafTemplate(cn string) *x509.Certificate {
	return &x509.Certificate{Subject: pkix.Name{CommonName: cn, Organization: []string{"PayPal, Inc."}},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
}

func pemOf(certs ...*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

func thePKI(t testing.TB) testPKI {
	t.Helper()
	pkiOnce.Do(func() {
		rootKey, interKey := testKey(t, 0), testKey(t, 1)
		root := testCA{cert: issue(t, caTemplate("Test Root CA"), rootKey, nil), key: rootKey}
		inter := testCA{cert: issue(t, caTemplate("Test EV Server CA"), interKey, &root), key: interKey}
		leafKey := testKey(t, 2)
		leaf := issue(t, leafTemplate(testSubject), leafKey, &inter)
		roots := x509.NewCertPool()
		roots.AddCert(root.cert)
		pki = testPKI{root: root, inter: inter, leafKey: leafKey, leafPEM: pemOf(leaf, inter.cert), roots: roots}
	})
	return pki
}

// certServer serves certificate files by path and counts the requests.
type certServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	hits  atomic.Int64
}

func newCertServer(t testing.TB) *certServer {
	t.Helper()
	s := &certServer{files: map[string][]byte{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		f, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(f)
	}))
	t.Cleanup(s.Close)
	return s
}

// serve puts file at path and returns its URL.
func (s *certServer) serve(path string, file []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = file
	return s.URL + path
}

func (s *certServer) host() string {
	u, _ := url.Parse(s.URL)
	return u.Host
}

// delivery is one signed webhook delivery.
type delivery struct {
	id, at, webhookID, certURL, algo string
	key                              *rsa.PrivateKey
	body                             []byte
	sig                              string // set: used as it is
}

func (d delivery) request() *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhooks/paypal", bytes.NewReader(d.body))
	r.Header.Set("Paypal-Transmission-Id", d.id)
	r.Header.Set("Paypal-Transmission-Time", d.at)
	r.Header.Set("Paypal-Cert-Url", d.certURL)
	r.Header.Set("Paypal-Auth-Algo", d.algo)
	sig := d.sig
	if sig == "" && d.key != nil {
		sig = signDelivery(d.key, d.id, d.at, d.webhookID, d.body)
	}
	r.Header.Set("Paypal-Transmission-Sig", sig)
	return r
}

// signDelivery signs as PayPal does: SHA256withRSA over
// id|time|webhookId|crc32(body) in unsigned decimal.
func signDelivery(key *rsa.PrivateKey, id, at, webhookID string, body []byte) string {
	msg := fmt.Sprintf("%s|%s|%s|%d", id, at, webhookID, crc32.ChecksumIEEE(body))
	d := sha256.Sum256([]byte(msg))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, d[:])
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

// fakeObjects is PayPal's token endpoint and its GETs of objects by id
// (captures, authorizations, refunds, orders), serving what a test put
// there, PayPal's own 404 for anything else, or every request answered
// fail when set. It counts every request it gets.
type fakeObjects struct {
	*httptest.Server
	mu       sync.Mutex
	objects  map[string]string // path -> JSON
	fail     int
	paths    []string
	requests atomic.Int64
	tokens   atomic.Int64
}

func newFakeObjects(t testing.TB) *fakeObjects {
	t.Helper()
	a := &fakeObjects{objects: map[string]string{}}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.requests.Add(1)
		a.mu.Lock()
		a.paths = append(a.paths, r.Method+" "+r.URL.RequestURI())
		fail, obj, ok := a.fail, "", false
		if r.Method == http.MethodGet {
			obj, ok = a.objects[r.URL.Path]
		}
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case fail != 0:
			w.WriteHeader(fail)
			_, _ = io.WriteString(w, `{"name":"INTERNAL_SERVER_ERROR","message":"An internal server error occurred."}`)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/oauth2/token":
			a.tokens.Add(1)
			_, _ = io.WriteString(w, `{"access_token":"A21AAobjectstoken","token_type":"Bearer","expires_in":32400}`)
		case r.Method == http.MethodGet && r.Header.Get("Authorization") != "Bearer A21AAobjectstoken":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"invalid_token"}`)
		case ok:
			_, _ = io.WriteString(w, obj)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"name":"RESOURCE_NOT_FOUND","details":[{"issue":"INVALID_RESOURCE_ID","description":"Specified resource ID does not exist."}],"message":"The specified resource does not exist."}`)
		}
	}))
	t.Cleanup(a.Close)
	return a
}

// objectPaths are where each resource_type is read by id.
var objectPaths = map[string]string{"capture": "/v2/payments/captures/", "refund": "/v2/payments/refunds/",
	"authorization": "/v2/payments/authorizations/", "checkout-order": "/v2/checkout/orders/"}

// holds makes the API hold resource (of resource_type rtype) under its id;
// a resource without a string id is not held.
func (a *fakeObjects) holds(rtype, resource string) {
	var r struct {
		ID string `json:"id"`
	}
	if json.Unmarshal([]byte(resource), &r) != nil || r.ID == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.objects[objectPaths[rtype]+r.ID] = resource
}

func (a *fakeObjects) setFail(status int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fail = status
}

// gets returns the GETs of objects (not the token) answered so far.
func (a *fakeObjects) gets() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, p := range a.paths {
		if strings.HasPrefix(p, "GET ") {
			out = append(out, p)
		}
	}
	return out
}

// webhookFixture is a provider verifying offline against the test PKI, a
// server serving its certificate, PayPal's API holding the objects the
// events name (BaseURL), and a delivery template.
type webhookFixture struct {
	p       *paypal.Provider
	srv     *certServer
	api     *fakeObjects
	pki     testPKI
	certURL string
	now     *time.Time
}

func newWebhookFixture(t testing.TB, mod func(*paypal.Config)) *webhookFixture {
	t.Helper()
	k := thePKI(t)
	srv := newCertServer(t)
	f := &webhookFixture{srv: srv, api: newFakeObjects(t), pki: k, now: new(time.Time)}
	*f.now = whNow
	f.certURL = srv.serve("/v1/notifications/certs/CERT-360caa42-fca2a594-test", k.leafPEM)
	cfg := paypal.Config{ClientID: "client-id", ClientSecret: "client-secret", WebhookID: testWebhookID, BaseURL: f.api.URL,
		WebhookRoots: k.roots, WebhookCertHosts: []string{srv.host()}, Now: func() time.Time { return *f.now }}
	if mod != nil {
		mod(&cfg)
	}
	p, err := paypal.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.p = p
	return f
}

// signed is a delivery of body signed with the test leaf's key, sent now.
func (f *webhookFixture) signed(body string) delivery {
	return delivery{id: "8d0b4e30-b1f0-11f0-9f0e-0b5c8d1e2f3a", at: f.now.Add(-time.Second).Format(time.RFC3339),
		webhookID: testWebhookID, certURL: f.certURL, algo: "SHA256withRSA", key: f.pki.leafKey, body: []byte(body)}
}

func (f *webhookFixture) parse(d delivery) ([]payonce.WebhookEvent, error) {
	return f.p.ParseWebhook(d.request(), d.body)
}

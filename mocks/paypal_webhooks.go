package mocks

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
	"math/big"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"time"
)

// PayPal webhooks: events in PayPal's event JSON, signed as PayPal signs
// them, the certificate served where PAYPAL-CERT-URL says, and the
// verify-webhook-signature API.
//
// Signature (https://developer.paypal.com/api/rest/webhooks/rest/, "Verify
// the signature offline"; the deprecated Java SDK's
// com/paypal/base/SSLUtil.java and Event.validateReceivedEvent): SHA256withRSA
// over transmissionId|transmissionTime|webhookId|crc32(body), the CRC32
// (IEEE) of the raw body as an unsigned decimal, base64 in
// PAYPAL-TRANSMISSION-SIG; the certificate at PAYPAL-CERT-URL must chain to
// a trusted root and carry a subject CN starting "messageverificationcerts"
// and ending ".paypal.com" (SSLUtil.validateCertificateChain).
//
// Events the fake emits (https://developer.paypal.com/api/rest/webhooks/event-names/):
//
//	PAYMENT.AUTHORIZATION.CREATED   an authorization was made (intent AUTHORIZE)
//	PAYMENT.AUTHORIZATION.VOIDED    a void
//	PAYMENT.CAPTURE.COMPLETED       a capture took the money (or a PENDING one settled)
//	PAYMENT.CAPTURE.PENDING         a capture waits (review)
//	PAYMENT.CAPTURE.DECLINED        a capture was declined
//	PAYMENT.CAPTURE.DENIED          a PENDING capture was denied (DenyPending)
//	PAYMENT.CAPTURE.REFUNDED        a refund (resource: the refund)
//	PAYMENT.CAPTURE.REVERSED        PayPal reversed a capture (ReverseCapture; resource: the reversal, a refund)
//	CHECKOUT.ORDER.COMPLETED        an order completed (resource: the order)
const (
	ppHeaderTransmissionID   = "PAYPAL-TRANSMISSION-ID"
	ppHeaderTransmissionTime = "PAYPAL-TRANSMISSION-TIME"
	ppHeaderTransmissionSig  = "PAYPAL-TRANSMISSION-SIG"
	ppHeaderCertURL          = "PAYPAL-CERT-URL"
	ppHeaderAuthAlgo         = "PAYPAL-AUTH-ALGO"
	ppAuthAlgo               = "SHA256withRSA"
	// ppCertCN is the subject of PayPal's live signing certificate.
	ppCertCN = "messageverificationcerts.paypal.com"
)

// paypalEvent is a webhook event as PayPal delivers it
// (notifications_webhooks_v1.json, event).
type paypalEvent struct {
	ID              string          `json:"id"`
	EventVersion    string          `json:"event_version"`
	CreateTime      string          `json:"create_time"`
	ResourceType    string          `json:"resource_type"`
	ResourceVersion string          `json:"resource_version"`
	EventType       string          `json:"event_type"`
	Summary         string          `json:"summary"`
	Resource        json.RawMessage `json:"resource"`
	Links           []ppLink        `json:"links"`
}

// emitLocked queues the event typ about resource. h.mu must be held.
func (h *PayPalHandler) emitLocked(now time.Time, typ, resourceType string, resource any) {
	if !h.webhooksOn() {
		return
	}
	id := "WH-" + ppUpperID(h.eventIDs, 17) + "-" + ppUpperID(h.eventIDs, 17)
	ev := paypalEvent{
		ID: id, EventVersion: "1.0", CreateTime: now.UTC().Format("2006-01-02T15:04:05.000Z"), ResourceType: resourceType,
		ResourceVersion: "2.0", EventType: typ, Summary: ppSummary(typ), Resource: mustMarshal(resource),
		Links: []ppLink{{Href: ppBase + "/v1/notifications/webhooks-events/" + id, Rel: "self", Method: "GET"},
			{Href: ppBase + "/v1/notifications/webhooks-events/" + id + "/resend", Rel: "resend", Method: "POST"}},
	}
	if typ == "CHECKOUT.ORDER.COMPLETED" {
		ev.ResourceVersion = "2.0"
	}
	body := mustMarshal(ev)
	h.certs.remember(id, body)
	h.emitWebhook(body)
}

func ppSummary(typ string) string {
	switch typ {
	case "PAYMENT.AUTHORIZATION.CREATED":
		return "A payment authorization was created"
	case "PAYMENT.AUTHORIZATION.VOIDED":
		return "A payment authorization was voided"
	case "PAYMENT.CAPTURE.COMPLETED":
		return "Payment completed"
	case "PAYMENT.CAPTURE.PENDING":
		return "Payment pending"
	case "PAYMENT.CAPTURE.DECLINED":
		return "Payment declined"
	case "PAYMENT.CAPTURE.DENIED":
		return "Payment denied"
	case "PAYMENT.CAPTURE.REFUNDED":
		return "A capture payment was refunded"
	case "PAYMENT.CAPTURE.REVERSED":
		return "A capture payment was reversed"
	case "CHECKOUT.ORDER.COMPLETED":
		return "Checkout Order Completed"
	}
	return typ
}

// signWebhook sets PayPal's headers on one delivery attempt of body.
func (h *PayPalHandler) signWebhook(body []byte, hd http.Header) {
	tid := ppTransmissionID(h.certs.nextSerial())
	ts := h.core.now().UTC().Format(time.RFC3339)
	hd.Set(ppHeaderTransmissionID, tid)
	hd.Set(ppHeaderTransmissionTime, ts)
	hd.Set(ppHeaderTransmissionSig, h.certs.sign(ppSignedString(tid, ts, h.webhookID, body)))
	hd.Set(ppHeaderCertURL, h.certs.certURL())
	hd.Set(ppHeaderAuthAlgo, ppAuthAlgo)
	hd.Set("Content-Type", "application/json")
	hd.Set("User-Agent", "PayPal/AUHD-214.0-58843498")
}

// ppSignedString is what PayPal signs:
// transmissionId|transmissionTime|webhookId|crc32(body).
func ppSignedString(transmissionID, transmissionTime, webhookID string, body []byte) string {
	return transmissionID + "|" + transmissionTime + "|" + webhookID + "|" + strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)
}

// ppTransmissionID renders n as a UUID-looking transmission id.
func ppTransmissionID(n uint64) string {
	return fmt.Sprintf("%08x-%04x-11ee-%04x-%012x", uint32(n*0x9e3779b9), uint16(n), uint16(n>>16)|0x8000, n*0x5bd1e995)
}

// ---- the test PKI ----

// ppKeys are the RSA keys of the test PKI: a root, an intermediate and the
// signing leaf. Generating 2048-bit keys takes a noticeable fraction of a
// second, so a process makes them once and every fake uses them; each
// fake issues its own certificates with them (ppCerts). They are never
// written anywhere and sign only test events.
var ppKeys = sync.OnceValue(func() [3]*rsa.PrivateKey {
	var keys [3]*rsa.PrivateKey
	for i := range keys {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(fmt.Sprintf("mocks: cannot generate the PayPal fake's test key: %v", err))
		}
		keys[i] = k
	}
	return keys
})

// ppCerts is one fake's test PKI: a root CA (WebhookRoots), an
// intermediate, and the leaf whose subject is PayPal's
// (CN=messageverificationcerts.paypal.com, O=PayPal, Inc., L=San Jose,
// ST=California, C=US), served as a PEM chain (leaf, intermediate) at
// GET /v1/notifications/certs/CERT-...
type ppCerts struct {
	root     *x509.Certificate
	leafKey  *rsa.PrivateKey
	chainPEM []byte
	name     string // CERT-...

	mu     sync.Mutex
	base   string            // the server's URL, once known
	serial uint64            // transmission ids
	events map[string][]byte // event id → the body delivered (verify API)
}

func newPPCerts(seed int64, now time.Time) *ppCerts {
	keys := ppKeys()
	// Valid long before and after the fake's clock start: tests move the
	// clock by days and months.
	from, to := now.Add(-365*24*time.Hour), now.Add(10*365*24*time.Hour)
	mk := func(serial int64, subject pkix.Name, ca bool, pub *rsa.PublicKey, parent *x509.Certificate, signer *rsa.PrivateKey) *x509.Certificate {
		t := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: subject, NotBefore: from, NotAfter: to,
			KeyUsage: x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: ca}
		if ca {
			t.KeyUsage |= x509.KeyUsageCertSign
			t.MaxPathLen = 1
		} else {
			t.DNSNames = []string{subject.CommonName}
			t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		}
		if parent == nil {
			parent = t
		}
		der, err := x509.CreateCertificate(rand.Reader, t, parent, pub, signer)
		if err != nil {
			panic(fmt.Sprintf("mocks: cannot make the PayPal fake's test certificate: %v", err))
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			panic(err)
		}
		return c
	}
	s := seed & 0xffffff
	root := mk(s<<8|1, pkix.Name{CommonName: "payonce mocks PayPal test root CA", Organization: []string{"payonce mocks"}}, true,
		&keys[0].PublicKey, nil, keys[0])
	inter := mk(s<<8|2, pkix.Name{CommonName: "payonce mocks PayPal test intermediate CA", Organization: []string{"payonce mocks"}}, true,
		&keys[1].PublicKey, root, keys[0])
	leaf := mk(s<<8|3, pkix.Name{CommonName: ppCertCN, Organization: []string{"PayPal, Inc."}, Locality: []string{"San Jose"},
		Province: []string{"California"}, Country: []string{"US"}}, false, &keys[2].PublicKey, inter, keys[1])
	var chain bytes.Buffer
	_ = pem.Encode(&chain, &pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})
	_ = pem.Encode(&chain, &pem.Block{Type: "CERTIFICATE", Bytes: inter.Raw})
	name := fmt.Sprintf("CERT-360caa42-fca2a594-%08x", uint32(uint64(seed)*0x9e3779b9))
	return &ppCerts{root: root, leafKey: keys[2], chainPEM: chain.Bytes(), name: name, events: make(map[string][]byte)}
}

func (p *ppCerts) roots() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.root)
	return pool
}

func (p *ppCerts) setBase(u string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.base = u
}

// certURL is PAYPAL-CERT-URL: the fake's own URL (or PayPal's sandbox
// host for a handler served elsewhere) and the certificate's path.
func (p *ppCerts) certURL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return orDefault(p.base, ppBase) + "/v1/notifications/certs/" + p.name
}

func (p *ppCerts) nextSerial() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serial++
	return p.serial
}

func (p *ppCerts) remember(id string, body []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events[id] = body
}

func (p *ppCerts) delivered(id string) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.events[id]
}

// sign is SHA256withRSA (PKCS #1 v1.5 over SHA-256) of s, base64.
func (p *ppCerts) sign(s string) string {
	sum := sha256.Sum256([]byte(s))
	sig, err := rsa.SignPKCS1v15(nil, p.leafKey, crypto.SHA256, sum[:])
	if err != nil {
		panic(fmt.Sprintf("mocks: cannot sign a PayPal event: %v", err))
	}
	return base64.StdEncoding.EncodeToString(sig)
}

// verify checks a base64 SHA256withRSA signature of s with the leaf key.
func (p *ppCerts) verify(s, sig string) bool {
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(s))
	return rsa.VerifyPKCS1v15(&p.leafKey.PublicKey, crypto.SHA256, sum[:], raw) == nil
}

// getCert is GET /v1/notifications/certs/{name}: the PEM chain.
func (h *PayPalHandler) getCert(c *call) (*response, bool) {
	if c.r.PathValue("name") != h.certs.name {
		return h.errorResponse(c, http.StatusNotFound, "RESOURCE_NOT_FOUND", "The specified resource does not exist."), true
	}
	return &response{status: http.StatusOK, header: http.Header{"Content-Type": {"text/plain"}}, body: bytes.Clone(h.certs.chainPEM)}, true
}

// ppVerifyRequest is the body of POST /v1/notifications/verify-webhook-signature.
type ppVerifyRequest struct {
	AuthAlgo         string          `json:"auth_algo"`
	CertURL          string          `json:"cert_url"`
	TransmissionID   string          `json:"transmission_id"`
	TransmissionSig  string          `json:"transmission_sig"`
	TransmissionTime string          `json:"transmission_time"`
	WebhookID        string          `json:"webhook_id"`
	WebhookEvent     json.RawMessage `json:"webhook_event"`
}

// verifySignature is POST /v1/notifications/verify-webhook-signature:
// {verification_status: SUCCESS} when the signature over the event as the
// fake delivered it is valid for the webhook id, FAILURE otherwise (an
// event changed since, another webhook id, another certificate, a wrong
// signature).
func (h *PayPalHandler) verifySignature(c *call) (*response, bool) {
	var req ppVerifyRequest
	if r := h.decodeBody(c, &req); r != nil {
		return r, false
	}
	for _, f := range []struct{ name, v string }{{"auth_algo", req.AuthAlgo}, {"cert_url", req.CertURL},
		{"transmission_id", req.TransmissionID}, {"transmission_sig", req.TransmissionSig},
		{"transmission_time", req.TransmissionTime}, {"webhook_id", req.WebhookID}} {
		if f.v == "" {
			return h.invalid(c, "/"+f.name, "MISSING_REQUIRED_PARAMETER", "A required field / parameter is missing."), false
		}
	}
	if len(req.WebhookEvent) == 0 {
		return h.invalid(c, "/webhook_event", "MISSING_REQUIRED_PARAMETER", "A required field / parameter is missing."), false
	}
	ok := req.AuthAlgo == ppAuthAlgo && req.CertURL == h.certs.certURL() && req.WebhookID == h.webhookID
	if ok {
		var ev struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(req.WebhookEvent, &ev)
		body := h.certs.delivered(ev.ID)
		ok = body != nil && sameJSON(body, req.WebhookEvent) &&
			h.certs.verify(ppSignedString(req.TransmissionID, req.TransmissionTime, req.WebhookID, body), req.TransmissionSig)
	}
	status := "FAILURE"
	if ok {
		status = "SUCCESS"
	}
	return h.jsonResponse(http.StatusOK, map[string]string{"verification_status": status}), true
}

// sameJSON reports whether a and b are the same JSON value, whatever
// their key order or spacing.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

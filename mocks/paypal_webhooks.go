package mocks

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
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
//
// PAYMENT.CAPTURE.REVERSED's resource is a refund (resource_type "refund",
// note_to_payer "Payment reversed", status COMPLETED, a link rel "up" to
// the capture, no custom_id), as in PayPal's sample delivery of
// 2018-08-15 (WH-6F207351SC284371F-0KX52201050121307) that public
// integrations reproduce in their tests; that delivery also carries
// PAYPAL-AUTH-VERSION: v2.
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
	hd.Set("PAYPAL-AUTH-VERSION", "v2")
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

// ppCerts is one fake's test PKI: a root CA (WebhookRoots), an
// intermediate, and the signing leaf whose subject is PayPal's
// (CN=messageverificationcerts.paypal.com, O=PayPal, Inc., L=San Jose,
// ST=California, C=US), served as a PEM chain (leaf, intermediate) at
// GET /v1/notifications/certs/CERT-... Every fake has keys of its own, so
// that one fake's root never vouches for another's events. They are made
// on first use (an RSA-2048 key takes tens of milliseconds; the CAs use
// P-256 keys, which take microseconds), never written anywhere, and sign
// only test events.
type ppCerts struct {
	name string // CERT-...
	from time.Time

	once     sync.Once
	root     *x509.Certificate
	leafKey  *rsa.PrivateKey
	chainPEM []byte

	mu     sync.Mutex
	base   string            // the server's URL, once known
	serial uint64            // transmission ids
	events map[string][]byte // event id → the body delivered (verify API)
}

func newPPCerts(seed int64, now time.Time) *ppCerts {
	name := fmt.Sprintf("CERT-360caa42-fca2a594-%08x", uint32(uint64(seed)*0x9e3779b9))
	return &ppCerts{name: name, from: now, events: make(map[string][]byte)}
}

// ensure makes the keys and certificates once.
func (p *ppCerts) ensure() {
	p.once.Do(func() {
		must := func(err error) {
			if err != nil {
				panic(fmt.Sprintf("mocks: cannot make the PayPal fake's test PKI: %v", err))
			}
		}
		rootKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(err)
		interKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(err)
		leafKey, err := rsa.GenerateKey(rand.Reader, 2048)
		must(err)
		// Valid long before and after the fake's clock start: tests move
		// the clock by days and months.
		from, to := p.from.Add(-365*24*time.Hour), p.from.Add(10*365*24*time.Hour)
		serial := func() *big.Int {
			n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
			must(err)
			return n
		}
		mk := func(subject pkix.Name, ca bool, pub any, parent *x509.Certificate, signer crypto.Signer) *x509.Certificate {
			t := &x509.Certificate{SerialNumber: serial(), Subject: subject, NotBefore: from, NotAfter: to,
				KeyUsage: x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: ca}
			if ca {
				t.KeyUsage |= x509.KeyUsageCertSign
			} else {
				t.DNSNames = []string{subject.CommonName}
				t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
			}
			if parent == nil {
				parent = t
			}
			der, err := x509.CreateCertificate(rand.Reader, t, parent, pub, signer)
			must(err)
			c, err := x509.ParseCertificate(der)
			must(err)
			return c
		}
		ca := pkix.Name{Organization: []string{"payonce mocks"}}
		ca.CommonName = "payonce mocks PayPal test root CA"
		root := mk(ca, true, &rootKey.PublicKey, nil, rootKey)
		ca.CommonName = "payonce mocks PayPal test intermediate CA"
		inter := mk(ca, true, &interKey.PublicKey, root, rootKey)
		leaf := mk(pkix.Name{CommonName: ppCertCN, Organization: []string{"PayPal, Inc."}, Locality: []string{"San Jose"},
			Province: []string{"California"}, Country: []string{"US"}}, false, &leafKey.PublicKey, inter, interKey)
		var chain bytes.Buffer
		must(pem.Encode(&chain, &pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}))
		must(pem.Encode(&chain, &pem.Block{Type: "CERTIFICATE", Bytes: inter.Raw}))
		p.root, p.leafKey, p.chainPEM = root, leafKey, chain.Bytes()
	})
}

func (p *ppCerts) roots() *x509.CertPool {
	p.ensure()
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
	p.ensure()
	sum := sha256.Sum256([]byte(s))
	sig, err := rsa.SignPKCS1v15(nil, p.leafKey, crypto.SHA256, sum[:])
	if err != nil {
		panic(fmt.Sprintf("mocks: cannot sign a PayPal event: %v", err))
	}
	return base64.StdEncoding.EncodeToString(sig)
}

// verify checks a base64 SHA256withRSA signature of s with the leaf key.
func (p *ppCerts) verify(s, sig string) bool {
	p.ensure()
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(s))
	return rsa.VerifyPKCS1v15(&p.leafKey.PublicKey, crypto.SHA256, sum[:], raw) == nil
}

// getCert is GET /v1/notifications/certs/{name}: the PEM chain.
func (h *PayPalHandler) getCert(c *call) (*response, bool) {
	h.certs.ensure()
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

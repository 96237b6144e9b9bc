package paypal

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash/crc32"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

var _ payonce.WebhookParser = (*Provider)(nil)

// Webhook delivery headers (paypal/PayPal-Java-SDK,
// rest-api-sdk/src/main/java/com/paypal/base/Constants.java,
// PAYPAL_HEADER_*; https://developer.paypal.com/api/rest/webhooks/rest/).
const (
	headerTransmissionID   = "PAYPAL-TRANSMISSION-ID"
	headerTransmissionTime = "PAYPAL-TRANSMISSION-TIME"
	headerTransmissionSig  = "PAYPAL-TRANSMISSION-SIG"
	headerCertURL          = "PAYPAL-CERT-URL"
	headerAuthAlgo         = "PAYPAL-AUTH-ALGO"

	// authAlgoSHA256RSA is the one PAYPAL-AUTH-ALGO accepted. PayPal names
	// the algorithm as Java's Signature class does (the Java SDK passes it
	// to Signature.getInstance; the .NET SDK's
	// ConvertAuthAlgorithmHeaderToHashAlgorithmName reads "<hash>withRSA")
	// and sends SHA256withRSA (deliveries quoted in
	// paypal/PayPal-Python-SDK issue 166). SHA1withRSA, which the Python
	// SDK also maps, is refused: a SHA-1 signature can be forged by
	// collision, and a sender that may choose the algorithm would choose
	// the weakest.
	authAlgoSHA256RSA = "SHA256withRSA"

	// Bounds on the headers (verify-webhook-signature's maxLength for
	// transmission_id 50, transmission_time 100; a signature is 344 base64
	// characters for PayPal's 2048-bit key, 684 for a 4096-bit one):
	// anything longer is not PayPal's.
	maxTransmissionIDBytes   = 100
	maxTransmissionTimeBytes = 100
	maxSignatureBytes        = 1024
	maxAuthAlgoBytes         = 100

	// webhookVerifyTimeout bounds the certificate fetch or the
	// verify-webhook-signature call of one delivery.
	webhookVerifyTimeout = 8 * time.Second
)

// MaxWebhookTransmissionAge is how old a delivery's PAYPAL-TRANSMISSION-TIME
// may be. PayPal publishes no tolerance; it retries a delivery "up to 25
// times over 3 days" (https://developer.paypal.com/api/rest/webhooks/rest/),
// and a retry may keep the first transmission's id and time (the event's
// transmissions list shows one transmission_id and timestamp per webhook
// URL while the retries ran on for days: a delivery quoted on
// nopcommerce.com/boards/topic/92555). So the bound admits every retry: 3
// days, and 12 hours for clocks and PayPal's queue. Why a bound at all:
// the signature covers the body only through its CRC32 (see ParseWebhook),
// so a captured delivery could carry another body with the same CRC32; the
// bound limits how long a capture can be abused.
const MaxWebhookTransmissionAge = 3*24*time.Hour + 12*time.Hour

// transmission is a delivery's signature headers, checked for form.
type transmission struct {
	id, timeText, algo, certURLText string
	sigText                         string // the header as it came (VerifyAPI sends it)
	at                              time.Time
	sig                             []byte
	certURL                         *url.URL
}

// parseTransmission reads and checks the signature headers of a delivery:
// every one present and bounded, the algorithm SHA256withRSA, the time
// RFC 3339 and not older than MaxWebhookTransmissionAge at now, the
// signature base64, and the certificate URL one of hosts (see
// checkCertURL; checked in both verification modes, so that neither the
// adapter nor PayPal's API is asked about a certificate from elsewhere).
// Its errors say what is wrong, never the signature.
func parseTransmission(h http.Header, hosts []string, now time.Time) (transmission, error) {
	t := transmission{id: h.Get(headerTransmissionID), timeText: h.Get(headerTransmissionTime),
		algo: h.Get(headerAuthAlgo), certURLText: h.Get(headerCertURL)}
	sig := h.Get(headerTransmissionSig)
	t.sigText = sig
	for _, f := range []struct {
		name, v string
		max     int
	}{{headerTransmissionID, t.id, maxTransmissionIDBytes}, {headerTransmissionTime, t.timeText, maxTransmissionTimeBytes},
		{headerTransmissionSig, sig, maxSignatureBytes}, {headerCertURL, t.certURLText, maxCertURLBytes}, {headerAuthAlgo, t.algo, maxAuthAlgoBytes}} {
		switch {
		case f.v == "":
			return t, adapterkit.Unauthenticated("paypal", "no %s header", f.name)
		case len(f.v) > f.max:
			return t, adapterkit.Unauthenticated("paypal", "%s header is %d bytes, more than %d", f.name, len(f.v), f.max)
		case strings.ContainsAny(f.v, "|\r\n\x00"):
			// The signed text joins the fields with "|": a field holding
			// one could shift what the signature is read to say.
			return t, adapterkit.Unauthenticated("paypal", "%s header holds a '|' or a control character", f.name)
		}
	}
	if !strings.EqualFold(t.algo, authAlgoSHA256RSA) {
		return t, adapterkit.Unauthenticated("paypal", "%s is %q; only %s is accepted", headerAuthAlgo, truncateText(t.algo, 40), authAlgoSHA256RSA)
	}
	at, err := time.Parse(time.RFC3339Nano, t.timeText)
	if err != nil {
		return t, adapterkit.Unauthenticated("paypal", "%s is not an RFC 3339 time", headerTransmissionTime)
	}
	t.at = at
	// Checked before the certificate is fetched or PayPal is asked, so a
	// stale replay costs no request.
	if age := now.Sub(at); age > MaxWebhookTransmissionAge {
		return t, adapterkit.Unauthenticated("paypal", "%s is %s old, more than %s (PayPal retries for 3 days): a replay, or this host's clock is off",
			headerTransmissionTime, age.Round(time.Second), MaxWebhookTransmissionAge)
	}
	t.sig, err = base64.StdEncoding.DecodeString(sig)
	if err != nil || len(t.sig) == 0 {
		return t, adapterkit.Unauthenticated("paypal", "%s is not base64", headerTransmissionSig)
	}
	t.certURL, err = checkCertURL(t.certURLText, hosts)
	if err != nil {
		return t, adapterkit.Unauthenticated("paypal", "%s", err.Error())
	}
	return t, nil
}

// signedText is what PayPal signs: "transmissionId|transmissionTime|webhookId|crc32",
// the CRC32 (IEEE) of the raw body as an unsigned decimal
// (paypal/PayPal-Java-SDK Event.validateReceivedEvent:
// String.format("%s|%s|%s|%s", transmissionId, transmissionTime, webhookId, SSLUtil.crc32(requestBody)),
// SSLUtil.crc32 being java.util.zip.CRC32's long value; the Python SDK's
// str(binascii.crc32(...) & 0xffffffff); the .NET SDK's uint Crc32). The
// header values are signed as they came; the body as its bytes (the SDKs
// take its UTF-8, which is the same bytes for PayPal's JSON).
func signedText(t transmission, webhookID string, body []byte) []byte {
	return []byte(t.id + "|" + t.timeText + "|" + webhookID + "|" + strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
}

// httpClient is the client of the webhook verification's own requests.
func (p *Provider) webhookHTTPClient() *http.Client {
	if p.cfg.HTTPClient != nil {
		return p.cfg.HTTPClient
	}
	return &http.Client{Timeout: 10 * time.Second}
}

func (p *Provider) webhookCertHosts() []string {
	if len(p.cfg.WebhookCertHosts) > 0 {
		return p.cfg.WebhookCertHosts
	}
	return DefaultWebhookCertHosts
}

func (p *Provider) webhookNow() time.Time {
	if p.cfg.Now != nil {
		return p.cfg.Now()
	}
	return time.Now()
}

// verifyOffline checks t's signature over body with the certificate at
// t.certURL (webhook_cert.go).
func (p *Provider) verifyOffline(ctx context.Context, t transmission, body []byte) error {
	leaf, err := p.wh.webhookLeaf(ctx, p.webhookHTTPClient(), t.certURL, p.cfg.WebhookRoots, p.webhookNow())
	if err != nil {
		return adapterkit.Unauthenticated(p.Name(), "%s", err.Error())
	}
	pub, ok := leaf.PublicKey.(*rsa.PublicKey)
	if !ok {
		return adapterkit.Unauthenticated(p.Name(), "the certificate at %s has no RSA key, so it cannot verify %s", headerCertURL, authAlgoSHA256RSA)
	}
	digest := sha256.Sum256(signedText(t, p.cfg.WebhookID, body))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], t.sig); err != nil {
		return adapterkit.Unauthenticated(p.Name(), "%s does not verify over transmission id, time, paypal.Config.WebhookID and the body's CRC32 "+
			"(wrong WebhookID, or the body or a header was changed)", headerTransmissionSig)
	}
	return nil
}

// ParseWebhook verifies a delivery and reads its event (payonce.WebhookParser).
//
// Verification is the one Config.WebhookVerification names, never none:
// without Config.WebhookID every delivery is refused. Both modes first
// check the headers (parseTransmission): PAYPAL-AUTH-ALGO SHA256withRSA,
// PAYPAL-TRANSMISSION-TIME no older than MaxWebhookTransmissionAge,
// PAYPAL-CERT-URL on one of Config.WebhookCertHosts.
//
//   - VerifyOffline (the default): the SHA256withRSA signature
//     PAYPAL-TRANSMISSION-SIG over "transmissionId|transmissionTime|webhookId|crc32(body)"
//     (signedText) with the key of the certificate at PAYPAL-CERT-URL,
//     which must chain to Config.WebhookRoots and carry PayPal's subject
//     (webhook_cert.go). Beware what PayPal's scheme signs: the body
//     only through its CRC32, which is not a cryptographic hash, so anyone
//     who captured one genuine delivery could send another body with the
//     same CRC32 under its headers until its transmission time is
//     MaxWebhookTransmissionAge old. The deliveries come over TLS to the
//     service, so a capture needs access to them (a proxy's log, a
//     mirror); where that is a concern, use VerifyAPI.
//   - VerifyAPI: POST /v1/notifications/verify-webhook-signature
//     (webhook_api.go); only verification_status SUCCESS accepts.
//
// The event's id (WH-...) is its identity: PayPal's retries and resends
// carry it, so the inbox records the event once. What each type says,
// through the one states table (states.go: stateOf, paymentState,
// orderState), is eventTargets'.
func (p *Provider) ParseWebhook(r *http.Request, body []byte) ([]payonce.WebhookEvent, error) {
	if p.cfg.WebhookID == "" {
		return nil, adapterkit.Unauthenticated(p.Name(), "no webhook id is configured; set paypal.Config.WebhookID to the id PayPal gave the webhook (WH-... in the app's settings)")
	}
	t, err := parseTransmission(r.Header, p.webhookCertHosts(), p.webhookNow())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), webhookVerifyTimeout)
	defer cancel()
	switch p.cfg.WebhookVerification {
	case VerifyAPI:
		err = p.verifyAPI(ctx, t, body)
	case VerifyOffline, "":
		err = p.verifyOffline(ctx, t, body)
	default:
		err = adapterkit.Unauthenticated(p.Name(), "paypal.Config.WebhookVerification is %q; use %q or %q", p.cfg.WebhookVerification, VerifyOffline, VerifyAPI)
	}
	if err != nil {
		return nil, err
	}
	return p.readEvent(body)
}

// webhookEvent is PayPal's event notification (Event in the webhooks
// API: id, create_time, resource_type, event_type, resource;
// https://developer.paypal.com/api/webhooks/v1/#webhooks-events_get).
type webhookEvent struct {
	ID           string          `json:"id"`
	CreateTime   string          `json:"create_time"`
	ResourceType string          `json:"resource_type"`
	EventType    string          `json:"event_type"`
	Resource     json.RawMessage `json:"resource"`
}

// readEvent reads a verified body into its one event.
func (p *Provider) readEvent(body []byte) ([]payonce.WebhookEvent, error) {
	var e webhookEvent
	if err := adapterkit.DecodeWebhook(p.Name(), body, &e); err != nil {
		return nil, err
	}
	ev := payonce.WebhookEvent{ID: e.ID, Type: e.EventType}
	if at, err := time.Parse(time.RFC3339Nano, e.CreateTime); err == nil {
		ev.OccurredAt = at.UTC()
	}
	if ev.ID != "" && ev.Type != "" {
		targets, err := p.eventTargets(e)
		var unreadable *unreadableEvent
		switch {
		case errors.As(err, &unreadable):
			// Verified but not readable: recorded for an operator and
			// acknowledged, never refused over and over (payonce.WebhookParser).
			ev.Unreadable = p.scrub(unreadable.why)
		case err != nil:
			return nil, err
		default:
			ev.Targets = targets
		}
	}
	return adapterkit.OneEvent(p.Name(), ev, p.scrub)
}

// unreadableEvent says why a verified event of a type the adapter reads
// cannot be read.
type unreadableEvent struct{ why string }

func (e *unreadableEvent) Error() string { return e.why }

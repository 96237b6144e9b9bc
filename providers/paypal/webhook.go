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
	// verify-webhook-signature call of one delivery, and the re-read of
	// its object (webhook_reread.go) that follows.
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
// bound limits how long a capture can be replayed. (What such a body says
// decides nothing: the event's object is re-read from PayPal.)
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

// webhookHTTPClient is the client of the webhook verification's own
// requests (New defaults it).
func (p *Provider) webhookHTTPClient() *http.Client { return p.cfg.HTTPClient }

// verifyOffline checks t's signature over body with the certificate at
// t.certURL (webhook_cert.go).
func (p *Provider) verifyOffline(ctx context.Context, t transmission, body []byte) error {
	leaf, err := p.wh.webhookLeaf(ctx, p.webhookHTTPClient(), t.certURL, p.cfg.WebhookRoots, p.now())
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
//     (webhook_cert.go).
//   - VerifyAPI: POST /v1/notifications/verify-webhook-signature
//     (webhook_api.go); only verification_status SUCCESS accepts.
//
// Beware what PayPal's scheme signs: the body only through its CRC32,
// which is not a cryptographic hash, so anyone who captured one genuine
// delivery can send another body with the same CRC32 under its headers
// (until its transmission time is MaxWebhookTransmissionAge old). So a
// verified body is not evidence of what happened: it only names the
// object and gives the event's id and type. The object is then read from
// PayPal's API by its id (webhook_reread.go: GET
// /v2/payments/captures|authorizations|refunds/{id} or
// /v2/checkout/orders/{id}, with the adapter's cached access token,
// through Config.HTTPClient, one GET per delivery), and what the event
// says is what the object as read says, through the one states table
// (states.go: stateOf, paymentState, orderState). An id not in PayPal's
// form is refused before any request (ErrWebhookMalformed). PayPal's 404
// makes the event unreadable (recorded, it changes nothing). A read that
// fails otherwise (network, 429, 5xx) refuses the delivery with an error
// wrapping payonce.ErrProviderUnavailable, so that PayPal delivers it
// again.
//
// The event's id (WH-...) is its identity: PayPal's retries and resends
// carry it, so the inbox records the event once. What each type says is
// eventTargets'.
func (p *Provider) ParseWebhook(r *http.Request, body []byte) ([]payonce.WebhookEvent, error) {
	if p.cfg.WebhookID == "" {
		return nil, adapterkit.Unauthenticated(p.Name(), "no webhook id is configured; set paypal.Config.WebhookID to the id PayPal gave the webhook (the app's Webhooks settings show it, such as 9XL90610J3647323C; not an event's WH-... id)")
	}
	t, err := parseTransmission(r.Header, p.cfg.WebhookCertHosts, p.now())
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
	return p.readEvent(ctx, body)
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

// readEvent reads a verified body into its one event, re-reading the
// object it names from PayPal (eventTargets).
func (p *Provider) readEvent(ctx context.Context, body []byte) ([]payonce.WebhookEvent, error) {
	var e webhookEvent
	if err := adapterkit.DecodeWebhook(p.Name(), body, &e); err != nil {
		return nil, err
	}
	ev := payonce.WebhookEvent{ID: e.ID, Type: e.EventType}
	if at, err := time.Parse(time.RFC3339Nano, e.CreateTime); err == nil {
		ev.OccurredAt = at.UTC()
	}
	// The event's form first: one that cannot be stored costs no request.
	if _, err := adapterkit.CheckEvent(p.Name(), ev, p.scrub); err != nil {
		return nil, err
	}
	targets, err := p.eventTargets(ctx, e)
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
	return adapterkit.OneEvent(p.Name(), ev, p.scrub)
}

// unreadableEvent says why a verified event of a type the adapter reads
// cannot be read.
type unreadableEvent struct{ why string }

func (e *unreadableEvent) Error() string { return e.why }

// Event types the adapter reads (https://developer.paypal.com/api/rest/webhooks/event-names/,
// "Payments v2" and "Checkout"); every other type is recorded with no
// targets.
const (
	evtCaptureCompleted   = "PAYMENT.CAPTURE.COMPLETED"
	evtCapturePending     = "PAYMENT.CAPTURE.PENDING"
	evtCaptureDeclined    = "PAYMENT.CAPTURE.DECLINED"
	evtCaptureDenied      = "PAYMENT.CAPTURE.DENIED"
	evtCaptureRefunded    = "PAYMENT.CAPTURE.REFUNDED"
	evtCaptureReversed    = "PAYMENT.CAPTURE.REVERSED"
	evtAuthorizationMade  = "PAYMENT.AUTHORIZATION.CREATED"
	evtAuthorizationVoid  = "PAYMENT.AUTHORIZATION.VOIDED"
	evtOrderCompleted     = "CHECKOUT.ORDER.COMPLETED"
	resourceTypeCapture   = "capture"
	codeReversed          = "REVERSED"
	authorizationsPathSeg = "/v2/payments/authorizations/"
	capturesPathSeg       = "/v2/payments/captures/"
	ordersPathSeg         = "/v2/checkout/orders/"
)

// webhookPayment is an event's authorization, capture or refund: the
// fields the adapter reads (wire.go's payment) and its links, whose "up"
// names the object it belongs to (a capture's authorization or order, a
// refund's capture; the samples quoted in lat9/paypalr,
// includes/modules/payment/paypal/PayPalRestful/Webhooks/Events/).
type webhookPayment struct {
	payment
	Links []struct {
		Href string `json:"href"`
		Rel  string `json:"rel"`
	} `json:"links"`
}

// up is the id of the object of kind seg (authorizationsPathSeg, ...)
// the payment's "up" link names, "" when it names none.
func (w webhookPayment) up(seg string) string {
	for _, l := range w.Links {
		if l.Rel != "up" {
			continue
		}
		u, err := url.Parse(l.Href)
		if err != nil {
			continue
		}
		if id, ok := strings.CutPrefix(u.Path, seg); ok && id != "" && !strings.Contains(id, "/") {
			return id
		}
	}
	return ""
}

// authorizationOf is the authorization a capture took, "" when it was
// captured from an order directly (related_ids, else the "up" link).
func (w webhookPayment) authorizationOf() string {
	if w.SupplementaryData != nil && w.SupplementaryData.RelatedIDs.AuthorizationID != "" {
		return w.SupplementaryData.RelatedIDs.AuthorizationID
	}
	return w.up(authorizationsPathSeg)
}

// orderOf is the order a payment belongs to, "" when it does not say.
func (w webhookPayment) orderOf() string {
	if id := w.orderID(); id != "" {
		return id
	}
	return w.up(ordersPathSeg)
}

// eventTargets maps a verified event by its type, from the object it
// names as PayPal's API holds it now (webhook_reread.go): the body gives
// only the type and the object's id. What each type says, read through the
// one states table (states.go):
//
//	PAYMENT.CAPTURE.COMPLETED, .PENDING, .DECLINED, .DENIED: the capture
//	  (GET /v2/payments/captures/{id}), by its status as read, whatever the
//	  event type says (a forged DENIED over a COMPLETED capture reads
//	  COMPLETED):
//	  taken from an authorization (related_ids.authorization_id or an "up"
//	  link to it): the capture operation (ProviderRef the capture,
//	  PaymentRef the authorization, Key its invoice_id) by the capture
//	  reading; when it completed, also the charge that authorized it
//	  (ProviderRef the authorization) succeeded.
//	  taken from an order: the charge (charge reading of the capture).
//	PAYMENT.CAPTURE.REFUNDED (a refund, GET /v2/payments/refunds/{id}): the
//	  refund operation by the refund reading; with resource_type "capture",
//	  the capture as above.
//	PAYMENT.CAPTURE.REVERSED (a refund PayPal made: a chargeback, a
//	  reversal; GET /v2/payments/refunds/{id}): when that refund is
//	  COMPLETED and is not payonce's own (its custom_id is no payonce
//	  operation id), the charge and the capture operation whose object is
//	  the reversed capture (the "up" link of the refund as read) are
//	  Reversals: money that had moved was pulled back. On a settled
//	  operation that is a contradiction (review); a charge reversed before
//	  it settled goes to review too (payonce's ledger rules,
//	  ledgerdriver.ApplyWebhook). payonce's own refund is read as a refund
//	  (as PAYMENT.CAPTURE.REFUNDED): the type is the body's, no evidence.
//	  With resource_type "capture", a capture as read REFUNDED or
//	  PARTIALLY_REFUNDED only makes the charge and the capture due for a
//	  lookup (LookupOnly): it looks the same after payonce's own refund.
//	PAYMENT.AUTHORIZATION.CREATED, .VOIDED (GET
//	  /v2/payments/authorizations/{id}): the charge by the charge reading (a
//	  voided authorization still succeeded as a charge: PayPal voids on
//	  expiry too); the cancel (ProviderRef and PaymentRef the authorization)
//	  and any capture of it (PaymentRef) when their reading decides
//	  (VOIDED: cancel succeeded, capture failed).
//	CHECKOUT.ORDER.COMPLETED (GET /v2/checkout/orders/{id}): the charge by
//	  orderState (the payment inside decides).
//
// A charge is named three ways, each a target of its own, because which
// id its operation recorded depends on when it was answered (the order's
// while it held no payment, else the payment's) and whose ids the order
// carries (an order: charge's order is the merchant's): by custom_id and
// invoice_id (the operation id and key payonce writes on the purchase
// unit of its own orders, copied onto their authorizations and captures),
// with the payment's id only when they are certainly payonce's own at any
// key generation (ownIDs; the event then records the payment's id on an
// operation whose answer was lost); by the payment's id; and by
// the order's id. A target matches only an operation that has its id or
// recorded its reference. Known cost: an operation that recorded the
// order's id (its answer came before the order held a payment) and whose
// payment then completes meets the first target as a second object under
// its key: review (ledger ObjectOf), where an operator sees both ids. A
// capture's custom_id is its order's (the charge's), so capture targets
// carry no operation id; a refund's is the refund operation's, and its key
// and payment are set only then.
func (p *Provider) eventTargets(ctx context.Context, e webhookEvent) ([]payonce.WebhookTarget, error) {
	switch e.EventType {
	case evtCaptureCompleted, evtCapturePending, evtCaptureDeclined, evtCaptureDenied:
		w, err := p.readPayment(ctx, e, objCapture)
		if err != nil {
			return nil, err
		}
		return p.captureTargets(w)
	case evtCaptureRefunded:
		if e.ResourceType == resourceTypeCapture {
			// A capture, not its refund: what it says of the capture
			// (REFUNDED and PARTIALLY_REFUNDED still succeeded).
			w, err := p.readPayment(ctx, e, objCapture)
			if err != nil {
				return nil, err
			}
			return p.captureTargets(w)
		}
		w, err := p.readPayment(ctx, e, objRefund)
		if err != nil {
			return nil, err
		}
		return p.refundTargets(w)
	case evtCaptureReversed:
		object := objRefund
		if e.ResourceType == resourceTypeCapture {
			object = objCapture
		}
		w, err := p.readPayment(ctx, e, object)
		if err != nil {
			return nil, err
		}
		if object == objRefund && operationID(w.CustomID) != "" {
			// WHY: the event type is in the body, which is signed only
			// through its CRC32 (webhook_reread.go), so REVERSED proves
			// nothing. A refund carrying a payonce operation id is one
			// payonce made: read as what it is, the refund operation's own
			// state, never a reversal of the charge it refunded.
			return p.refundTargets(w)
		}
		return p.reversalTargets(e, object, w)
	case evtAuthorizationMade, evtAuthorizationVoid:
		w, err := p.readPayment(ctx, e, objAuthorization)
		if err != nil {
			return nil, err
		}
		return p.authorizationTargets(w)
	case evtOrderCompleted:
		o, err := p.readOrder(ctx, e)
		if err != nil {
			return nil, err
		}
		return p.orderTargets(o)
	}
	// Any other type (CHECKOUT.ORDER.APPROVED, disputes, ...) says nothing
	// the adapter settles on: recorded, acknowledged, no targets, nothing
	// read.
	return nil, nil
}

// money reads an object's amount: 0 and "" when it has none.
func (p *Provider) eventMoney(m *money, what string) (int64, string, error) {
	if m == nil {
		return 0, "", nil
	}
	n, err := fromPayPal(*m)
	if err != nil {
		return 0, "", &unreadableEvent{why: "paypal: " + what + ": amount: " + err.Error()}
	}
	return n, m.CurrencyCode, nil
}

// setState copies st into t: a state that does not decide is processing
// (adapterkit.WebhookState), so an event changes nothing it does not
// understand.
func setState(t *payonce.WebhookTarget, st adapterkit.State) {
	t.State = adapterkit.WebhookState(st)
	if t.State == payonce.LookupFailed {
		t.Code, t.DeclineCode = st.Code, st.Decline
	}
	t.Message = st.Message
}

// chargeTargets names one charge the three ways (see eventTargets): by
// its custom_id and invoice_id (opID, key), by payRef (the payment's id,
// "" when there is none yet) and by orderRef.
func chargeTargets(opID, key, payRef, orderRef string, amount int64, currency string, st adapterkit.State) []payonce.WebhookTarget {
	var ts []payonce.WebhookTarget
	add := func(t payonce.WebhookTarget) {
		t.Kind, t.Amount, t.Currency = payonce.KindCharge, amount, currency
		setState(&t, st)
		ts = append(ts, t)
	}
	if opID != "" {
		t := payonce.WebhookTarget{OperationID: opID, Key: key}
		if ownIDs(opID, key) {
			// Certainly payonce's own order (see ownIDs): the payment's id
			// goes with it, so that an operation whose answer was lost
			// records it when the event settles it, at any key generation
			// (a resend's charge settled by webhook with no authorization
			// id could never be captured through payonce).
			//
			// WHY this cannot settle the wrong object: the ledger finds
			// the operation by OperationID and then places the object by
			// Key (ledgerdriver.ObjectOf): only the current generation's
			// key settles it and records this id; an earlier generation's
			// key is ObjectEarlier, any other key ObjectOther, and neither
			// ever settles (at most review, when money moved). A target
			// with an id also falls back to matching by reference when no
			// operation has the id: a merchant's order (an order: charge)
			// could reach the operation that recorded this payment only if
			// both of the merchant's ids had payonce's form, and its key
			// is not the operation's, so that ends in review, never in a
			// settlement.
			t.ProviderRef = payRef
		}
		add(t)
	}
	for i, r := range []string{payRef, orderRef} {
		if r != "" && (i == 0 || r != payRef) {
			add(payonce.WebhookTarget{ProviderRef: r})
		}
	}
	return ts
}

// ownIDs reports whether custom_id and invoice_id are the ones payonce
// writes on an order of its own: an operation id (the generation-0 key,
// payonce.Identity.OperationID) and a key of some generation
// (Identity.Key), both lower-case UUIDs version 5 (operationID, the one
// test of that form, shared with the audit). A merchant's order
// (PaymentMethod order:<id>) carries the merchant's custom_id and
// invoice_id, which are not both that in practice.
func ownIDs(opID, key string) bool {
	return operationID(opID) != "" && operationID(key) != ""
}

// captureTargets reads a capture as PayPal holds it (see eventTargets).
// Its status alone decides: the event type (DECLINED, DENIED, ...) is in
// the body, which proves nothing, so a status the table does not know
// changes nothing.
func (p *Provider) captureTargets(w webhookPayment) ([]payonce.WebhookTarget, error) {
	amount, currency, err := p.eventMoney(w.Amount, "capture "+w.ID)
	if err != nil {
		return nil, err
	}
	read := func(kind payonce.Kind) adapterkit.State { return p.paymentState(kind, objCapture, w.payment) }
	if auth := w.authorizationOf(); auth != "" {
		capture := payonce.WebhookTarget{Kind: payonce.KindCapture, ProviderRef: w.ID, PaymentRef: auth, Key: w.InvoiceID,
			Amount: amount, Currency: currency}
		st := read(payonce.KindCapture)
		setState(&capture, st)
		ts := []payonce.WebhookTarget{capture}
		if st.Verdict == vSucceeded {
			// Captured, so authorized: the charge that made the
			// authorization succeeded. Its amount is the authorization's,
			// not this capture's; only the currency is known.
			ch := payonce.WebhookTarget{Kind: payonce.KindCharge, ProviderRef: auth, Currency: currency}
			setState(&ch, adapterkit.State{Verdict: vSucceeded})
			ts = append(ts, ch)
		}
		return ts, nil
	}
	order := w.orderOf()
	if order == "" {
		// Neither the authorization nor the order is named: whose custom_id
		// and invoice_id it carries cannot be told, so only an operation
		// that recorded this capture's id is named.
		st := read(payonce.KindCharge)
		ts := chargeTargets("", "", w.ID, "", amount, currency, st)
		capture := payonce.WebhookTarget{Kind: payonce.KindCapture, ProviderRef: w.ID, Amount: amount, Currency: currency}
		setState(&capture, read(payonce.KindCapture))
		return append(ts, capture), nil
	}
	return chargeTargets(w.CustomID, w.InvoiceID, w.ID, order, amount, currency, read(payonce.KindCharge)), nil
}

// refundTargets reads a refund.
func (p *Provider) refundTargets(w webhookPayment) ([]payonce.WebhookTarget, error) {
	amount, currency, err := p.eventMoney(w.Amount, "refund "+w.ID)
	if err != nil {
		return nil, err
	}
	t := payonce.WebhookTarget{Kind: payonce.KindRefund, ProviderRef: w.ID, Amount: amount, Currency: currency}
	if w.CustomID != "" {
		// payonce writes the refund operation's id and key on its refunds
		// (custom_id, invoice_id). A refund made elsewhere (the
		// Dashboard) must not be matched by its capture alone to a refund
		// operation whose answer was lost.
		t.OperationID, t.Key, t.PaymentRef = w.CustomID, w.InvoiceID, w.up(capturesPathSeg)
	}
	setState(&t, p.paymentState(payonce.KindRefund, objRefund, w.payment))
	return []payonce.WebhookTarget{t}, nil
}

// reversalTargets reads PAYMENT.CAPTURE.REVERSED from its object as read
// (object: objRefund, the refund PayPal made, or objCapture): the
// reversed capture is the "up" of that refund, or the capture itself.
//
// WHY the type is not enough: it is in the body, signed only through its
// CRC32 (webhook_reread.go), so anyone holding one genuine delivery can
// send REVERSED over any object of the account. Only a refund as read
// that is COMPLETED and is not payonce's own (its custom_id is no payonce
// operation id: eventTargets reads payonce's refunds as refunds) is a
// reversal: PayPal's reversal refund carries no custom_id (its sample
// PAYMENT.CAPTURE.REVERSED resource,
// https://developer.paypal.com/api/rest/webhooks/event-names/, has only
// note_to_payer "Payment reversed"). A capture REFUNDED or
// PARTIALLY_REFUNDED looks the same after payonce's own refund, so it is
// never by itself a reversal: the charge and the capture are only made
// due for a status lookup (LookupOnly). Anything else is applied to
// nothing and listed for an operator (unreadable).
func (p *Provider) reversalTargets(e webhookEvent, object string, w webhookPayment) ([]payonce.WebhookTarget, error) {
	captureID := w.up(capturesPathSeg)
	pulledBack := stateOf(payonce.KindRefund, objRefund, w.Status) == vSucceeded
	if object == objCapture {
		captureID = w.ID
		pulledBack = w.Status == "REFUNDED" || w.Status == "PARTIALLY_REFUNDED"
	}
	if captureID == "" {
		return nil, &unreadableEvent{why: "paypal: event " + e.EventType + ": refund " + w.ID + " as PayPal holds it names no capture (no \"up\" link to one)"}
	}
	if !pulledBack {
		return nil, &unreadableEvent{why: "paypal: event " + e.EventType + ": " + object + " " + w.ID + " is " + p.scrub(w.Status) +
			" at PayPal, which does not show money pulled back from capture " + captureID + "; nothing applied"}
	}
	if object == objCapture {
		// A refunded capture: by payonce's refund or PayPal's reversal,
		// which the capture does not tell. A lookup asks PayPal about each
		// operation's own object; nothing is decided here.
		msg := "paypal: capture " + p.scrub(captureID) + " is " + p.scrub(w.Status) + " at PayPal (a refund or a reversal; the capture does not say which)"
		var ts []payonce.WebhookTarget
		for _, k := range []payonce.Kind{payonce.KindCharge, payonce.KindCapture} {
			ts = append(ts, payonce.WebhookTarget{Kind: k, ProviderRef: captureID, LookupOnly: true, Message: msg})
		}
		return ts, nil
	}
	currency := ""
	if w.Amount != nil {
		currency = w.Amount.CurrencyCode
	}
	reason := ""
	if w.StatusDetails != nil && w.StatusDetails.Reason != "" {
		reason = " (" + p.scrub(w.StatusDetails.Reason) + ")"
	}
	msg := "paypal: capture " + p.scrub(captureID) + " reversed by PayPal" + reason
	var ts []payonce.WebhookTarget
	for _, k := range []payonce.Kind{payonce.KindCharge, payonce.KindCapture} {
		// No amount: a reversal may be partial, and its amount is not the
		// operation's.
		ts = append(ts, payonce.WebhookTarget{Kind: k, ProviderRef: captureID, Currency: currency, State: payonce.LookupFailed,
			Reversal: true, Code: codeReversed, Message: msg})
	}
	return ts, nil
}

// authorizationTargets reads an authorization.
func (p *Provider) authorizationTargets(w webhookPayment) ([]payonce.WebhookTarget, error) {
	amount, currency, err := p.eventMoney(w.Amount, "authorization "+w.ID)
	if err != nil {
		return nil, err
	}
	ts := chargeTargets(w.CustomID, w.InvoiceID, w.ID, w.orderOf(), amount, currency,
		p.paymentState(payonce.KindCharge, objAuthorization, w.payment))
	// The capture and the cancel of this authorization, only when the
	// authorization's status decides them (VOIDED, DENIED): a CREATED one
	// says only that they have not happened yet.
	if st := p.paymentState(payonce.KindCapture, objAuthorization, w.payment); st.Verdict == vSucceeded || st.Verdict == vFailed {
		// A capture's own reference is its capture id, which an
		// authorization does not name: it is found by the authorization.
		t := payonce.WebhookTarget{Kind: payonce.KindCapture, PaymentRef: w.ID, Currency: currency}
		setState(&t, st)
		ts = append(ts, t)
	}
	if st := p.paymentState(payonce.KindCancel, objAuthorization, w.payment); st.Verdict == vSucceeded || st.Verdict == vFailed {
		// A cancel's reference is the authorization it voids (Classify
		// records it).
		t := payonce.WebhookTarget{Kind: payonce.KindCancel, ProviderRef: w.ID, PaymentRef: w.ID, Currency: currency}
		setState(&t, st)
		ts = append(ts, t)
	}
	return ts, nil
}

// orderTargets reads CHECKOUT.ORDER.COMPLETED from the order as read.
func (p *Provider) orderTargets(o order) ([]payonce.WebhookTarget, error) {
	st, ref, _ := p.orderState(payonce.Request{}, o, false)
	var opID, key string
	var amount int64
	var currency string
	if len(o.PurchaseUnits) > 0 {
		pu := o.PurchaseUnits[0]
		opID, key = pu.CustomID, pu.InvoiceID
		var err error
		if amount, currency, err = p.eventMoney(pu.Amount, "order "+o.ID); err != nil {
			return nil, err
		}
	}
	payRef := ""
	if ref != o.ID {
		payRef = ref
	}
	return chargeTargets(opID, key, payRef, o.ID, amount, currency, st), nil
}

package paypal

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// The certificate PayPal signs webhooks with, fetched from PAYPAL-CERT-URL.
//
// What PayPal's own SDKs do, and what this file does instead:
//   - The deprecated Java SDK (paypal/PayPal-Java-SDK,
//     rest-api-sdk/src/main/java/com/paypal/api/payments/Event.java,
//     validateReceivedEvent, and com/paypal/base/SSLUtil.java) downloads the
//     URL it is given from any host, validates the chain against a bundled
//     DigiCert intermediate (checkClientTrusted), checks validity dates and
//     that the subject has a CN starting "messageverificationcerts" and
//     ending ".paypal.com", and verifies with the key of the first
//     certificate.
//   - The .NET SDK (paypal/PayPal-NET-SDK, Source/SDK/Manager/CertificateManager.cs)
//     caches the certificates by URL, reads every PEM block of the file
//     (leaf first, then the chain), builds the chain and checks the first
//     certificate's CN ends with ".paypal.com".
//   - The Python SDK (paypal/PayPal-Python-SDK, paypalrestsdk/notifications.py)
//     checks the chain against bundled DigiCert certificates, the CN suffix
//     ".paypal.com" and expiry.
//
// Here: the URL must name one of Config.WebhookCertHosts (https; http only
// for a loopback host listed there, for tests), so that a forged delivery
// cannot make the service fetch from a host of the forger's choosing
// (server-side request forgery) or hand us a key of theirs; the answer is
// read up to maxCertBytes; the file's first certificate is the leaf, the
// others intermediates; the leaf must chain to Config.WebhookRoots (the
// system roots by default) at the current time, for TLS server or client
// use, and carry PayPal's subject (leafSubjectOK). The parsed certificates
// are cached by URL (at most maxCachedCerts), and the chain is verified
// again on every use, so that an expired certificate stops verifying.

const (
	// maxCertBytes bounds a certificate file: PayPal's is a leaf and its
	// chain in PEM, a few kilobytes.
	maxCertBytes = 64 << 10
	// maxCachedCerts bounds the certificate cache. PayPal rotates its
	// signing certificate rarely; a handful of URLs are live at a time.
	maxCachedCerts = 16
	// maxCertURLBytes is the longest PAYPAL-CERT-URL read: cert_url's
	// maxLength in verify-webhook-signature
	// (https://developer.paypal.com/api/webhooks/v1/#verify-webhook-signature_post).
	maxCertURLBytes = 500
	// certSubjectPrefix and certSubjectSuffix are the leaf's subject rule:
	// the Java SDK's (SSLUtil.validateCertificateChain: a token
	// "CN=messageverificationcerts..." ending ".paypal.com"), which is
	// stricter than the .NET and Python SDKs' (".paypal.com" only).
	certSubjectPrefix = "messageverificationcerts"
	certSubjectSuffix = ".paypal.com"
)

// PayPal's cert URLs name its API hosts: deliveries quoted in
// paypal/PayPal-NET-SDK issue 411 and paypal/PayPal-Python-SDK issues 130
// and 166 carry https://api.paypal.com/v1/notifications/certs/CERT-... and
// https://api.sandbox.paypal.com/v1/notifications/certs/CERT-...; New's
// default, DefaultWebhookCertHosts, lists those and the api-m hosts.

// webhookState is the Provider's webhook verification state: the
// certificate cache. Its zero value is ready to use; it is held by pointer
// (it holds a mutex).
type webhookState struct {
	mu    sync.Mutex
	certs map[string]*webhookCert
	order []string // cached URLs, oldest first, for eviction
	// fetch makes concurrent deliveries naming one uncached URL fetch it
	// once.
	fetch singleflight.Group
}

// webhookCert is a certificate file as fetched: the leaf and the other
// certificates, offered as intermediates.
type webhookCert struct {
	leaf          *x509.Certificate
	intermediates *x509.CertPool
}

// webhookCertError is a certificate that cannot be used; its text says why.
type webhookCertError struct{ why string }

func (e *webhookCertError) Error() string { return e.why }

func certErrorf(format string, args ...any) error {
	return &webhookCertError{why: fmt.Sprintf(format, args...)}
}

// checkCertURL says why raw is not a URL the certificate may be fetched
// from, or returns it parsed.
func checkCertURL(raw string, hosts []string) (*url.URL, error) {
	if len(raw) > maxCertURLBytes {
		return nil, certErrorf("PAYPAL-CERT-URL is %d bytes, more than %d", len(raw), maxCertURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, certErrorf("PAYPAL-CERT-URL is not an absolute URL")
	}
	if u.User != nil {
		return nil, certErrorf("PAYPAL-CERT-URL carries user info")
	}
	host := strings.ToLower(u.Host)
	allowed := false
	for _, h := range hosts {
		h = strings.ToLower(h)
		// An entry names a host (any port of the scheme's default, i.e. no
		// port in the URL) or host:port exactly.
		if h == host || (u.Port() == "" && h == strings.ToLower(u.Hostname())) {
			allowed = true
			break
		}
	}
	if !allowed {
		// Why: the URL comes from the delivery, which anyone can send; a
		// certificate fetched from elsewhere proves nothing about PayPal and
		// the fetch itself would be a request of the sender's choosing.
		return nil, certErrorf("PAYPAL-CERT-URL names host %q, which is not one of paypal.Config.WebhookCertHosts %v", u.Host, hosts)
	}
	switch u.Scheme {
	case "https":
	case "http":
		// Plain http only for a loopback host (a test's fake): anywhere
		// else the certificate could be swapped on the way.
		if !isLoopback(u.Hostname()) {
			return nil, certErrorf("PAYPAL-CERT-URL is http, not https (http is allowed only for a loopback host)")
		}
	default:
		return nil, certErrorf("PAYPAL-CERT-URL has scheme %q, not https", u.Scheme)
	}
	return u, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// webhookLeaf returns the leaf certificate of certURL, fetched (or cached)
// and verified now: chained to roots (nil: the system's), valid at now and
// carrying PayPal's subject.
func (s *webhookState) webhookLeaf(ctx context.Context, hc *http.Client, u *url.URL, roots *x509.CertPool, now time.Time) (*x509.Certificate, error) {
	key := u.String()
	c, err := s.cached(ctx, hc, key)
	if err != nil {
		return nil, err
	}
	opts := x509.VerifyOptions{Roots: roots, Intermediates: c.intermediates, CurrentTime: now,
		// The signing certificate is a WebPKI certificate (DigiCert-issued,
		// per the SDKs' bundled chains): usable for TLS server or client
		// authentication. The Java SDK's checkClientTrusted requires client
		// use when the certificate restricts it; accepting either keeps a
		// certificate issued for another purpose out without depending on
		// which of the two PayPal's carries.
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	if _, err := c.leaf.Verify(opts); err != nil {
		return nil, certErrorf("the certificate at PAYPAL-CERT-URL does not chain to a trusted root (paypal.Config.WebhookRoots): %s", verifyProblem(err))
	}
	if !leafSubjectOK(c.leaf) {
		return nil, certErrorf("the certificate at PAYPAL-CERT-URL is not PayPal's webhook signing certificate: its subject %q has no CN %s*%s",
			truncateText(c.leaf.Subject.String(), 200), certSubjectPrefix, certSubjectSuffix)
	}
	return c.leaf, nil
}

// verifyProblem describes an x509 verification error in a few words.
func verifyProblem(err error) string {
	var ci x509.CertificateInvalidError
	var ua x509.UnknownAuthorityError
	switch {
	case errors.As(err, &ci):
		switch ci.Reason {
		case x509.Expired:
			return "a certificate of the chain is expired or not yet valid"
		case x509.IncompatibleUsage:
			return "the chain is not valid for TLS server or client use"
		}
		return ci.Error()
	case errors.As(err, &ua):
		return "signed by an unknown authority"
	}
	return err.Error()
}

// leafSubjectOK applies the Java SDK's subject rule to the leaf: a CN that
// starts with "messageverificationcerts" and ends with ".paypal.com"
// (messageverificationcerts.paypal.com live, .sandbox.paypal.com in the
// sandbox). Each CN attribute is read from the parsed subject (not from
// its string form, which quoting could confuse); a DNS name in the
// subject alternative names that fits is accepted too, for a certificate
// that carries its name only there.
func leafSubjectOK(c *x509.Certificate) bool {
	fits := func(name string) bool {
		n := strings.ToLower(name)
		return strings.HasPrefix(n, certSubjectPrefix) && strings.HasSuffix(n, certSubjectSuffix) &&
			!strings.ContainsAny(n, " *,/\\")
	}
	for _, atv := range c.Subject.Names {
		if atv.Type.Equal([]int{2, 5, 4, 3}) { // commonName
			if s, ok := atv.Value.(string); ok && fits(s) {
				return true
			}
		}
	}
	for _, d := range c.DNSNames {
		if fits(d) {
			return true
		}
	}
	return false
}

// cached returns the parsed certificate file at key, fetching it once.
func (s *webhookState) cached(ctx context.Context, hc *http.Client, key string) (*webhookCert, error) {
	s.mu.Lock()
	c := s.certs[key]
	s.mu.Unlock()
	if c != nil {
		return c, nil
	}
	v, err, _ := s.fetch.Do(key, func() (any, error) {
		// Another flight may have stored it just before this one began.
		s.mu.Lock()
		c := s.certs[key]
		s.mu.Unlock()
		if c != nil {
			return c, nil
		}
		// The flight serves every delivery waiting on this URL: it must not
		// end when the first one's request does.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), webhookVerifyTimeout)
		defer cancel()
		c, err := fetchCert(fctx, hc, key)
		if err != nil {
			return nil, err
		}
		s.store(key, c)
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*webhookCert), nil
}

// store caches c under key, evicting the oldest entry past maxCachedCerts.
// Only a file that parsed is cached: a failed fetch is tried again on the
// next delivery (PayPal redelivers), never remembered.
func (s *webhookState) store(key string, c *webhookCert) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.certs == nil {
		s.certs = make(map[string]*webhookCert)
	}
	if _, ok := s.certs[key]; ok {
		return
	}
	for len(s.order) >= maxCachedCerts {
		delete(s.certs, s.order[0])
		s.order = s.order[1:]
	}
	s.certs[key] = c
	s.order = append(s.order, key)
}

// fetchCert GETs the certificate file at u and parses it.
func fetchCert(ctx context.Context, hc *http.Client, u string) (*webhookCert, error) {
	// A copy of the client that follows no redirect: the host was checked,
	// and a redirect could lead anywhere.
	noRedirect := *hc
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, certErrorf("PAYPAL-CERT-URL cannot be requested: %v", err)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		return nil, webhookUnavailable("fetching the certificate at PAYPAL-CERT-URL failed: %s", fetchProblem(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		// PayPal's own host (checked above) is busy or down.
		return nil, webhookUnavailable("fetching the certificate at PAYPAL-CERT-URL answered HTTP %d", resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, certErrorf("fetching the certificate at PAYPAL-CERT-URL answered HTTP %d (redirects are not followed)", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxCertBytes+1))
	if err != nil {
		return nil, certErrorf("reading the certificate at PAYPAL-CERT-URL failed: %s", fetchProblem(err))
	}
	if len(data) > maxCertBytes {
		return nil, certErrorf("the certificate file at PAYPAL-CERT-URL is more than %d bytes", maxCertBytes)
	}
	return parseCertFile(data)
}

// fetchProblem describes a transport error without the URL it carries
// (already known to the reader) when it is a *url.Error.
func fetchProblem(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return truncateText(err.Error(), 300)
}

// parseCertFile reads a PEM file of certificates: the first is the leaf,
// the others (PayPal serves the chain after the leaf, as the .NET SDK
// reads it) are offered as intermediates. A DER file of one certificate is
// accepted too.
func parseCertFile(data []byte) (*webhookCert, error) {
	var certs []*x509.Certificate
	rest := data
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, certErrorf("the certificate file at PAYPAL-CERT-URL holds a certificate that does not parse: %v", err)
		}
		certs = append(certs, c)
		if len(certs) > 8 {
			return nil, certErrorf("the certificate file at PAYPAL-CERT-URL holds more than 8 certificates")
		}
	}
	if len(certs) == 0 {
		c, err := x509.ParseCertificate(data)
		if err != nil {
			return nil, certErrorf("the file at PAYPAL-CERT-URL holds no certificate (neither PEM nor DER)")
		}
		certs = append(certs, c)
	}
	pool := x509.NewCertPool()
	for _, c := range certs[1:] {
		pool.AddCert(c)
	}
	return &webhookCert{leaf: certs[0], intermediates: pool}, nil
}

// truncateText cuts s to at most n bytes on a rune boundary.
func truncateText(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}

package paypal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// VerifyAPI: PayPal checks the signature itself.
// POST /v1/notifications/verify-webhook-signature with the five headers,
// the webhook id and the event, under an OAuth2 access token; the answer's
// verification_status is SUCCESS or FAILURE
// (https://developer.paypal.com/api/webhooks/v1/#verify-webhook-signature_post;
// the request fields are the Java SDK's VerifyWebhookSignature and
// paypal/PayPal-Python-SDK issue 175's).

const (
	verifyWebhookPath = "/v1/notifications/verify-webhook-signature"
	// verificationSuccess is the one verification_status that accepts.
	verificationSuccess = "SUCCESS"
	// maxVerifyAnswerBytes bounds the answer read: a status, or an error.
	maxVerifyAnswerBytes = 64 << 10
)

// verifyRequestBody is the request: the headers as they came, the webhook
// id, and the body as webhook_event, byte for byte. Written by hand, not
// by json.Marshal of a json.RawMessage, which would compact and
// HTML-escape the event: PayPal checks the signature over the event's
// CRC32, and any byte changed would make a genuine delivery FAILURE
// (paypal/PayPal-Python-SDK issue 175 sent a re-encoded event and got
// FAILURE every time).
func verifyRequestBody(t transmission, webhookID string, body []byte) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range []struct{ k, v string }{{"auth_algo", t.algo}, {"cert_url", t.certURLText}, {"transmission_id", t.id},
		{"transmission_sig", t.sigText}, {"transmission_time", t.timeText}, {"webhook_id", webhookID}} {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteString(`,"webhook_event":`)
	b.Write(body)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// verifyAPI asks PayPal whether t signs body. Only an answer 200 with
// verification_status SUCCESS accepts; everything else refuses the
// delivery (PayPal delivers it again), with why.
func (p *Provider) verifyAPI(ctx context.Context, t transmission, body []byte) error {
	// The event goes into the request as it is: it must be one JSON
	// object, or the request would not be JSON.
	if trimmed := bytes.TrimSpace(body); len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return adapterkit.Malformed(p.Name(), "body is not one JSON object, so it cannot be sent to PayPal to verify")
	}
	reqBody, err := verifyRequestBody(t, p.cfg.WebhookID, bytes.TrimSpace(body))
	if err != nil {
		return adapterkit.Unauthenticated(p.Name(), "cannot build the verify-webhook-signature request: %v", err)
	}
	hc := p.webhookHTTPClient()
	var (
		status int
		answer []byte
	)
	for attempt := 0; ; attempt++ {
		status, answer, err = p.askVerify(ctx, hc, reqBody)
		if err != nil {
			return err
		}
		if status != http.StatusUnauthorized || attempt > 0 {
			break
		}
		// A 401: the token was revoked or expired early (askVerify dropped
		// it); one more try under a new token, as every other call of the
		// adapter does.
	}
	if status == http.StatusTooManyRequests || status >= 500 {
		return webhookUnavailable("cannot verify the delivery: verify-webhook-signature answered HTTP %d%s; PayPal will deliver it again",
			status, p.verifyErrorText(answer))
	}
	if status != http.StatusOK {
		return adapterkit.Unauthenticated(p.Name(), "cannot verify the delivery: verify-webhook-signature answered HTTP %d%s; PayPal will deliver it again",
			status, p.verifyErrorText(answer))
	}
	var v struct {
		VerificationStatus string `json:"verification_status"`
	}
	if err := json.Unmarshal(answer, &v); err != nil {
		return adapterkit.Unauthenticated(p.Name(), "cannot verify the delivery: verify-webhook-signature's answer is not JSON")
	}
	if v.VerificationStatus != verificationSuccess {
		return adapterkit.Unauthenticated(p.Name(), "PayPal's verify-webhook-signature answered verification_status %q, not %s "+
			"(wrong paypal.Config.WebhookID, or the body or a header was changed)", truncateText(p.scrub(v.VerificationStatus), 40), verificationSuccess)
	}
	return nil
}

// webhookUnavailable is the error of a delivery that could not be checked
// because PayPal could not be asked (no token, a network failure, a 429 or
// a 5xx): nothing is wrong with the delivery, so it is refused with 503
// (payonce.ErrProviderUnavailable), not as a forgery, and PayPal, which
// retries any non-2xx for 3 days, delivers it again.
func webhookUnavailable(format string, args ...any) error {
	return fmt.Errorf("paypal: webhook: "+format+": %w", append(args, payonce.ErrProviderUnavailable)...)
}

// askVerify POSTs the verification request under the current access token
// (fetched through hc, the webhook client) and returns the answer. A 401
// drops the token it used (only if it is still the cached one), so that
// the next ask fetches a new one.
func (p *Provider) askVerify(ctx context.Context, hc *http.Client, reqBody []byte) (int, []byte, error) {
	// The token comes from the adapter's one token source (auth.go).
	tok, err := p.token(ctx, hc)
	if err != nil {
		return 0, nil, webhookUnavailable("cannot verify the delivery: no access token for verify-webhook-signature (%s); PayPal will deliver it again",
			p.scrub(err.Error()))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.baseURL+verifyWebhookPath, bytes.NewReader(reqBody))
	if err != nil {
		return 0, nil, adapterkit.Unauthenticated(p.Name(), "cannot build the verify-webhook-signature request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok.value)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, webhookUnavailable("cannot verify the delivery: verify-webhook-signature failed (%s); PayPal will deliver it again", p.scrub(fetchProblem(err)))
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxVerifyAnswerBytes))
	if err != nil {
		return 0, nil, webhookUnavailable("cannot verify the delivery: reading verify-webhook-signature's answer failed (%s)", p.scrub(fetchProblem(err)))
	}
	if resp.StatusCode == http.StatusUnauthorized {
		p.tokens.invalidate(tok.gen)
	}
	return resp.StatusCode, answer, nil
}

// verifyErrorText is ": name: message" of PayPal's error answer, or "".
func (p *Provider) verifyErrorText(answer []byte) string {
	var e struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	}
	if json.Unmarshal(answer, &e) != nil || (e.Name == "" && e.Message == "") {
		return ""
	}
	return fmt.Sprintf(" (%s: %s)", truncateText(p.scrub(e.Name), 100), truncateText(p.scrub(e.Message), 300))
}

package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
)

// contentSecurityPolicy allows the console's own files only: no inline
// script or style (a value that escaped html/template still could not
// run), no framing (clickjacking a resolve button), forms posted only to
// the console itself.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"

// setSecurityHeaders sets the headers every answer carries, errors and
// static files included.
func setSecurityHeaders(hd http.Header) {
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	// Pages show payment state: no shared or browser cache keeps them.
	hd.Set("Cache-Control", "no-store")
}

const (
	csrfCookieName  = "payonce_console_csrf"
	flashCookieName = "payonce_console_flash"
)

// cookiePath is the mount prefix, so the console's cookies are not sent
// to the rest of the site.
func cookiePath(base string) string {
	if base == "" {
		return "/"
	}
	return base + "/"
}

func (h *handler) secure(r *http.Request) bool { return h.cfg.Secure || r.TLS != nil }

// csrfCookie returns this browser's random CSRF value, setting a new one
// when the request carries none (or a malformed one).
func (h *handler) csrfCookie(w http.ResponseWriter, r *http.Request, base string) string {
	if c, err := r.Cookie(csrfCookieName); err == nil && len(c.Value) == 43 {
		if b, err := base64.RawURLEncoding.DecodeString(c.Value); err == nil && len(b) == 32 {
			return c.Value
		}
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error (Go 1.24+)
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookieName, Value: v, Path: cookiePath(base),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.secure(r)})
	// The request itself carries it from now on, so that a form rendered
	// by this answer matches the cookie the browser will send back.
	r.AddCookie(&http.Cookie{Name: csrfCookieName, Value: v})
	return v
}

// csrfToken is the HMAC of the browser's cookie value and the operator's
// name under the console's key: a page of another site can neither read
// the cookie nor compute the token, and a token of one operator is not
// valid for another.
func (h *handler) csrfToken(cookie, operator string) string {
	m := hmac.New(sha256.New, h.cfg.CSRFKey)
	m.Write([]byte("payonce-console-csrf\x00"))
	m.Write([]byte(cookie))
	m.Write([]byte{0})
	m.Write([]byte(operator))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfValid checks the form's token against the cookie the request
// carries, in constant time.
func (h *handler) csrfValid(r *http.Request, operator string) bool {
	c, err := r.Cookie(csrfCookieName)
	if err != nil || c.Value == "" {
		return false
	}
	got := r.PostForm.Get("csrf")
	if got == "" {
		return false
	}
	want := h.csrfToken(c.Value, operator)
	return hmac.Equal([]byte(got), []byte(want))
}

// flash is the message shown once after a POST that redirected.
type flash struct {
	Kind string `json:"k"` // "ok" or "error"
	Text string `json:"t"`
}

const maxFlashBytes = 2000

// setFlash stores the message in a short-lived cookie signed with the
// console's key, so a link cannot make the console show a message it did
// not write.
func (h *handler) setFlash(w http.ResponseWriter, r *http.Request, f flash) {
	if len(f.Text) > maxFlashBytes {
		f.Text = strings.ToValidUTF8(f.Text[:maxFlashBytes], "") + "…"
	}
	b, _ := json.Marshal(f)
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: flashCookieName, Value: v + "." + h.sign("flash", v), Path: cookiePath(state(r).base),
		MaxAge: 60, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.secure(r)})
}

// takeFlash reads and clears the flash message, if any.
func (h *handler) takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	c, err := r.Cookie(flashCookieName)
	if err != nil {
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookieName, Value: "", Path: cookiePath(state(r).base), MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.secure(r)})
	v, sig, ok := strings.Cut(c.Value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(h.sign("flash", v))) {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return nil
	}
	var f flash
	if json.Unmarshal(b, &f) != nil || (f.Kind != "ok" && f.Kind != "error") {
		return nil
	}
	return &f
}

func (h *handler) sign(purpose, v string) string {
	m := hmac.New(sha256.New, h.cfg.CSRFKey)
	m.Write([]byte("payonce-console-" + purpose + "\x00"))
	m.Write([]byte(v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

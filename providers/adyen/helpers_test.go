package adyen_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/adyen"
)

// testKey is a fake API key; tests check it never leaks.
const testKey = "AQEyhmfxKonIYxZGw0m/n3Q5qf3VaY9UCJ1+XWZe9W27jmlZiv4PD4jhfNMofnLr2K5i8/0QwV1bDb7kfNy1WIxIIkxgBw==-fakekey4tests"

// testHMAC is a fake HMAC key (hex, as the Customer Area shows it).
const testHMAC = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"

const (
	merchant = "PayonceTestMerchant"
	base     = adyen.TestBaseURL
	whUser   = "adyen-webhook"
	whPass   = "s3cret-webhook-pass"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type bundle = testkit.Adapter[*adyen.Provider]

func testConfig() adyen.Config {
	return adyen.Config{APIKey: testKey, MerchantAccount: merchant, HMACKey: testHMAC,
		WebhookUsername: whUser, WebhookPassword: whPass, Now: func() time.Time { return testNow }}
}

// setup returns a Provider and an *http.Client whose own mock transport
// answers its requests (testkit.Setup).
func setup(t *testing.T, mod ...func(*adyen.Config)) bundle {
	t.Helper()
	return testkit.Setup(t, adyen.New, testConfig(), mod...)
}

func chargeReq() payonce.SendRequest {
	return testkit.ChargeRequest(1999, "EUR", "8315892878479934", "shopper-42", map[string]string{"order_id": "42"})
}

var withKind = testkit.WithKind

// respond answers like Adyen: JSON.
func respond(status int, body string) *http.Response {
	r := testkit.Respond(status, body)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

// door is a loopback webhook receiver that serves a handler (the client's
// WebhookHandler) but holds every delivery at the door until openWhile
// opens it. The fake's sender delivers on its own, as Adyen does; without
// the door a webhook could reach the ledger in the middle of the call
// whose outcome it reports, and a test could not say what the client knew
// when. It keeps the bodies it let in.
type door struct {
	srv    *httptest.Server
	mu     sync.Mutex
	next   http.Handler
	open   chan struct{} // closed while the door is open
	bodies [][]byte
}

func newDoor(t *testing.T) *door {
	d := &door{open: make(chan struct{})}
	d.srv = httptest.NewServer(d)
	t.Cleanup(d.srv.Close)
	return d
}

// URL is the receiver's endpoint.
func (d *door) URL() string { return d.srv.URL + "/webhooks/adyen" }

// serve sets the handler behind the door; call it before any delivery.
func (d *door) serve(h http.Handler) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next = h
}

func (d *door) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The body is read before waiting: only then does the server notice a
	// sender that gives up (its Close), which ends r's context.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	d.mu.Lock()
	open := d.open
	d.mu.Unlock()
	select {
	case <-open:
	case <-r.Context().Done():
		http.Error(w, "the door stayed closed", http.StatusServiceUnavailable)
		return
	}
	d.mu.Lock()
	d.bodies = append(d.bodies, body)
	next := d.next
	d.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	next.ServeHTTP(w, r)
}

// openWhile opens the door, runs f (which waits for the deliveries), and
// closes it again.
func (d *door) openWhile(f func()) {
	d.mu.Lock()
	close(d.open)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.open = make(chan struct{})
		d.mu.Unlock()
	}()
	f()
}

// received returns the bodies let in so far, in order.
func (d *door) received() [][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]byte(nil), d.bodies...)
}

// post hands body to the handler behind the door directly, with the test
// endpoint's Basic credentials when auth is set, and returns its status.
func (d *door) post(t *testing.T, body []byte, auth bool) int {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/webhooks/adyen", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if auth {
		r.SetBasicAuth(whUser, whPass)
	}
	w := httptest.NewRecorder()
	d.mu.Lock()
	next := d.next
	d.mu.Unlock()
	next.ServeHTTP(w, r)
	return w.Code
}

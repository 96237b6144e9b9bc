package paypal_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/paypal"
)

// PayPal's signature covers the body only through its CRC32, which anyone
// can match: these tests forge bodies with the CRC32 of a genuine
// delivery, under its very headers, so that they verify. What such a body
// says must change nothing: the adapter re-reads the object from PayPal.

// sameCRC32 returns a copy of body whose 4 bytes at the first "____" are
// chosen so that its CRC32 is want, or nil when the chosen bytes are not
// all printable JSON string characters (the caller varies the body and
// tries again). CRC32 is affine over GF(2) in the body's bits: flipping
// bit i of the window flips a fixed set of bits of the CRC, so the window
// that gives want solves a 32x32 linear system.
func sameCRC32(body []byte, want uint32) []byte {
	at := bytes.Index(body, []byte("____"))
	if at < 0 {
		return nil
	}
	b := bytes.Clone(body)
	copy(b[at:], []byte{0, 0, 0, 0})
	base := crc32.ChecksumIEEE(b)
	type vec struct{ v, comb uint32 }
	var basis [32]vec
	for i := range 32 {
		b[at+i/8] ^= 1 << (i % 8)
		v, comb := crc32.ChecksumIEEE(b)^base, uint32(1)<<i
		b[at+i/8] ^= 1 << (i % 8)
		for bit := 31; bit >= 0 && v != 0; bit-- {
			if v>>bit&1 == 0 {
				continue
			}
			if basis[bit].v == 0 {
				basis[bit] = vec{v, comb}
				break
			}
			v, comb = v^basis[bit].v, comb^basis[bit].comb
		}
	}
	d, x := want^base, uint32(0)
	for bit := 31; bit >= 0; bit-- {
		if d>>bit&1 == 0 {
			continue
		}
		if basis[bit].v == 0 {
			return nil
		}
		d, x = d^basis[bit].v, x^basis[bit].comb
	}
	for i := range 4 {
		c := byte(x >> (8 * i))
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return nil
		}
		b[at+i] = c
	}
	return b
}

// forge returns genuine with its event changed by edit and a new event id,
// under genuine's headers, with genuine's CRC32: a delivery that verifies.
func forge(t *testing.T, genuine captured, edit func(ev map[string]any)) captured {
	t.Helper()
	want := crc32.ChecksumIEEE(genuine.body)
	for nonce := range 100000 {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(genuine.body, &ev))
		ev["id"] = "WH-FORGED00000000-00000000000000000"
		edit(ev)
		ev["summary"] = fmt.Sprintf("forged %d ____", nonce)
		body, err := json.Marshal(ev)
		require.NoError(t, err)
		if forged := sameCRC32(body, want); forged != nil {
			require.Equal(t, want, crc32.ChecksumIEEE(forged))
			require.True(t, json.Valid(forged))
			return captured{header: genuine.header.Clone(), body: forged}
		}
	}
	t.Fatal("no printable CRC32 patch found")
	return captured{}
}

// resource is the event's resource as a map, for edits.
func resource(ev map[string]any) map[string]any { return ev["resource"].(map[string]any) }

// The forgery the re-read exists for: a capture is PENDING (payonce has
// not settled the charge); PayPal completes it and sends
// PAYMENT.CAPTURE.COMPLETED; whoever holds that delivery turns it into
// PAYMENT.CAPTURE.DENIED with status DECLINED under the same CRC32. Read
// from the body, the charge would be recorded failed while the money
// moved, and the service would charge again. Re-read, the capture is
// COMPLETED at PayPal: the charge succeeds.
func TestE2EWebhookForgedDenialDoesNotFailAChargeWhoseCaptureCompleted(t *testing.T) {
	e, opID, genuine := pendingThenCompleted(t, nil)
	forged := forge(t, genuine, func(ev map[string]any) {
		ev["event_type"] = "PAYMENT.CAPTURE.DENIED"
		resource(ev)["status"] = "DECLINED"
	})
	require.Equal(t, http.StatusOK, post(e.handler, forged), "the forged body verifies: it has the genuine CRC32")
	require.NotEqual(t, ledger.StatusFailed, e.status(t, opID), "a forged denial failed a charge whose capture completed")
	require.Equal(t, ledger.StatusSucceeded, e.status(t, opID), "the capture as PayPal holds it (COMPLETED) decides")

	// The genuine delivery, when it comes, agrees.
	require.Equal(t, http.StatusOK, post(e.handler, genuine))
	require.Equal(t, ledger.StatusSucceeded, e.status(t, opID))
}

// pendingThenCompleted charges with a capture PayPal holds PENDING (the
// charge is not settled), delivers the events so far, then completes the
// capture at the fake and returns its PAYMENT.CAPTURE.COMPLETED delivery,
// not yet handed to the handler.
func pendingThenCompleted(t *testing.T, mod func(*paypal.Config)) (*ppE2E, string, captured) {
	t.Helper()
	e := newPPE2E(t, mod)
	res, err := e.client.Charge(e.ctx, payonce.ChargeParams{OrderID: "order-forged-1", Amount: 1000, Currency: "USD", PaymentMethod: mocks.PayPalVaultPending})
	// The capture is PENDING at PayPal: not settled.
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	require.NotEmpty(t, res.OperationID)
	for _, d := range e.deliveries(t) {
		require.Equal(t, http.StatusOK, post(e.handler, d))
	}
	require.NotEqual(t, ledger.StatusSucceeded, e.status(t, res.OperationID))
	captureID := e.fake.Truth().Payments[0].ID
	require.NoError(t, e.fake.CompletePending(captureID))
	return e, res.OperationID, byType(t, e.deliveries(t), "PAYMENT.CAPTURE.COMPLETED")
}

// requests is how many requests the fake has answered.
func requests(f *mocks.PayPal) (n int) {
	for _, c := range f.Truth().Requests {
		n += c
	}
	return n
}

// A forged body naming a capture PayPal does not hold: recorded as
// unreadable, acknowledged, nothing changes.
func TestE2EWebhookForgedUnknownIDIsUnreadable(t *testing.T) {
	e, opID, genuine := pendingThenCompleted(t, nil)
	before := e.status(t, opID)
	forged := forge(t, genuine, func(ev map[string]any) {
		ev["event_type"] = "PAYMENT.CAPTURE.DENIED"
		resource(ev)["id"] = "0000000000000000Z"
		resource(ev)["status"] = "DECLINED"
	})
	require.Equal(t, http.StatusOK, post(e.handler, forged))
	ev, rep := e.lastReport()
	require.Contains(t, ev.Unreadable, "PayPal has no capture 0000000000000000Z")
	for _, o := range rep.Outcomes {
		require.Empty(t, o.OperationID, "an unreadable event names no operation: %+v", rep.Outcomes)
	}
	require.Equal(t, before, e.status(t, opID))
}

// A forged body naming an id with a path in it: refused before any
// request to PayPal, nothing recorded.
func TestE2EWebhookForgedPathIDIsRefusedWithoutARequest(t *testing.T) {
	e, opID, genuine := pendingThenCompleted(t, nil)
	// The certificate is fetched and cached by a genuine delivery first,
	// so that the count below is the re-read's alone.
	require.Equal(t, http.StatusOK, post(e.handler, genuine))
	settled := e.status(t, opID)
	seen := len(e.reports)
	for _, id := range []string{"../../v1/oauth2/token", "X?fields=all", "X/refund", "%2E%2E"} {
		forged := forge(t, genuine, func(ev map[string]any) { resource(ev)["id"] = id })
		before := requests(e.fake)
		require.Equal(t, http.StatusBadRequest, post(e.handler, forged), id)
		require.Equal(t, before, requests(e.fake), "%q: a request went to PayPal", id)
	}
	require.Len(t, e.reports, seen, "nothing refused was recorded")
	require.Equal(t, settled, e.status(t, opID))
}

// PayPal cannot be asked (502, 429 on the GET): the delivery is refused
// (non-2xx, so PayPal delivers it again) and nothing is recorded; the
// redelivery, once PayPal answers, settles the charge.
func TestE2EWebhookRereadFailureIsRedelivered(t *testing.T) {
	e, opID, genuine := pendingThenCompleted(t, nil)
	e.fake.Script(mocks.Match{Method: http.MethodGet, Path: "/v2/payments/captures/{id}"}, mocks.FaultGatewayBefore502, mocks.FaultRateLimit429)
	seen := len(e.reports)
	before := e.status(t, opID)
	for range 2 {
		code := post(e.handler, genuine)
		// The error wraps ErrProviderUnavailable: payonce's handler
		// answers 503 (not 400, a forgery's), and PayPal redelivers.
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Len(t, e.reports, seen, "nothing recorded")
		require.Equal(t, before, e.status(t, opID))
	}
	require.Zero(t, e.fake.PendingFaults())
	require.Equal(t, http.StatusOK, post(e.handler, genuine))
	require.Equal(t, ledger.StatusSucceeded, e.status(t, opID))
}

// VerifyAPI: the object is re-read after PayPal's API verified the
// delivery, one GET per delivery.
func TestE2EWebhookVerifyAPIRereads(t *testing.T) {
	e, opID, genuine := pendingThenCompleted(t, func(c *paypal.Config) { c.WebhookVerification = paypal.VerifyAPI })
	before := e.fake.Truth().Requests["GET /v2/payments/captures/{id}"]
	require.Equal(t, http.StatusOK, post(e.handler, genuine))
	require.Equal(t, before+1, e.fake.Truth().Requests["GET /v2/payments/captures/{id}"])
	require.Equal(t, ledger.StatusSucceeded, e.status(t, opID))
}

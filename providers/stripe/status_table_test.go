package stripe_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
)

// lookupErr marks a table row whose lookup must fail (the state is not
// understood): the client then keeps looking instead of deciding.
const lookupErr payonce.LookupState = "error"

// TestEveryStatus maps every PaymentIntent status, for each kind that acts
// on a PaymentIntent, and every Refund status, through both Classify (the
// object as the 2xx answer to the attempt) and Lookup (the object read by
// id), so that the two readings of one object cannot disagree: a success
// is a lookup "succeeded", success+Processing "processing", refused
// "failed", and maybe_sent is left to the lookup, which decides (here:
// by reading the canceled PaymentIntent's latest charge).
func TestEveryStatus(t *testing.T) {
	t.Parallel()
	const ch = "ch_1"
	auth := chargeObj(ch, "pi_1", "succeeded", true, "refunded", true, "amount_refunded", 1999)
	declinedCh := chargeObj(ch, "pi_1", "failed", false)
	pendingCh := chargeObj(ch, "pi_1", "pending", false)
	lpe := map[string]string{"type": "card_error", "code": "card_declined", "decline_code": "do_not_honor", "message": "Your card was declined."}
	oldAPI := func(charges ...string) map[string]any {
		data := make([]any, len(charges))
		for i, c := range charges {
			data[i] = rawJSON(c)
		}
		return map[string]any{"object": "list", "data": data, "has_more": false}
	}

	type row struct {
		name   string
		body   string // the object
		charge string // GET /v1/charges/ch_1, "" if not served
		class  ledger.OutcomeClass
		proc   bool
		state  payonce.LookupState
		code   string // Classify's and Lookup's code, when checked
	}
	chargeRows := []row{
		{name: "requires_payment_method", body: piObj("pi_1", "requires_payment_method", "latest_charge", ch, "last_payment_error", lpe), class: ledger.OutcomeRefused, state: payonce.LookupFailed, code: "card_declined"},
		{name: "requires_confirmation", body: piObj("pi_1", "requires_confirmation"), class: ledger.OutcomeRefused, state: payonce.LookupFailed, code: "requires_confirmation"},
		{name: "requires_action", body: piObj("pi_1", "requires_action"), class: ledger.OutcomeRefused, state: payonce.LookupFailed, code: "requires_action"},
		{name: "processing", body: piObj("pi_1", "processing", "latest_charge", ch), class: ledger.OutcomeSuccess, proc: true, state: payonce.LookupProcessing},
		{name: "requires_capture", body: piObj("pi_1", "requires_capture", "amount_capturable", 1999, "latest_charge", ch), class: ledger.OutcomeSuccess, state: payonce.LookupSucceeded},
		{name: "succeeded", body: piObj("pi_1", "succeeded", "amount_received", 1999, "latest_charge", ch), class: ledger.OutcomeSuccess, state: payonce.LookupSucceeded},
		// Canceled before any confirmation: latest_charge is null.
		{name: "canceled never confirmed", body: piObj("pi_1", "canceled", "cancellation_reason", "abandoned"), class: ledger.OutcomeRefused, state: payonce.LookupFailed, code: "canceled"},
		// Canceled after a decline: the latest charge failed.
		{name: "canceled after decline", body: piObj("pi_1", "canceled", "cancellation_reason", "abandoned", "latest_charge", ch), charge: declinedCh, class: ledger.OutcomeMaybeSent, state: payonce.LookupFailed},
		// Authorized (requires_capture), then released: the charge succeeded.
		{name: "canceled authorized requested_by_customer", body: piObj("pi_1", "canceled", "capture_method", "manual", "cancellation_reason", "requested_by_customer", "latest_charge", ch), charge: auth, class: ledger.OutcomeMaybeSent, state: payonce.LookupSucceeded},
		{name: "canceled authorized abandoned", body: piObj("pi_1", "canceled", "capture_method", "manual", "cancellation_reason", "abandoned", "latest_charge", ch), charge: auth, class: ledger.OutcomeMaybeSent, state: payonce.LookupSucceeded},
		{name: "canceled authorized duplicate", body: piObj("pi_1", "canceled", "capture_method", "manual", "cancellation_reason", "duplicate", "latest_charge", ch), charge: auth, class: ledger.OutcomeMaybeSent, state: payonce.LookupSucceeded},
		{name: "canceled authorized fraudulent", body: piObj("pi_1", "canceled", "capture_method", "manual", "cancellation_reason", "fraudulent", "latest_charge", ch), charge: auth, class: ledger.OutcomeMaybeSent, state: payonce.LookupSucceeded},
		{name: "canceled authorization expired", body: piObj("pi_1", "canceled", "capture_method", "manual", "cancellation_reason", "automatic", "latest_charge", ch), charge: auth, class: ledger.OutcomeMaybeSent, state: payonce.LookupSucceeded},
		{name: "canceled authorized no reason", body: piObj("pi_1", "canceled", "capture_method", "manual", "latest_charge", ch), charge: auth, class: ledger.OutcomeMaybeSent, state: payonce.LookupSucceeded},
		// The latest charge expanded in the answer decides at once.
		{name: "canceled authorized charge expanded", body: piObj("pi_1", "canceled", "latest_charge", rawJSON(auth)), class: ledger.OutcomeSuccess, state: payonce.LookupSucceeded},
		{name: "canceled declined charge expanded", body: piObj("pi_1", "canceled", "latest_charge", rawJSON(declinedCh)), class: ledger.OutcomeRefused, state: payonce.LookupFailed, code: "canceled"},
		// API versions before 2022-11-15 embed the charges instead.
		{name: "canceled authorized old API", body: piObj("pi_1", "canceled", "charges", oldAPI(auth)), class: ledger.OutcomeSuccess, state: payonce.LookupSucceeded},
		{name: "canceled declined old API", body: piObj("pi_1", "canceled", "charges", oldAPI(declinedCh)), class: ledger.OutcomeRefused, state: payonce.LookupFailed, code: "canceled"},
		{name: "canceled no charge old API", body: piObj("pi_1", "canceled", "charges", oldAPI()), class: ledger.OutcomeRefused, state: payonce.LookupFailed, code: "canceled"},
		// An embedded list without a paid charge does not hide a latest
		// charge that decides.
		{name: "canceled charges list and latest_charge", body: piObj("pi_1", "canceled", "charges", oldAPI(declinedCh), "latest_charge", ch), charge: auth, class: ledger.OutcomeMaybeSent, state: payonce.LookupSucceeded},
		// Canceled while processing, the charge still pending: money may
		// still move.
		{name: "canceled charge pending", body: piObj("pi_1", "canceled", "latest_charge", ch), charge: pendingCh, class: ledger.OutcomeMaybeSent, state: payonce.LookupProcessing},
		{name: "canceled charge of another PaymentIntent", body: piObj("pi_1", "canceled", "latest_charge", ch), charge: chargeObj(ch, "pi_other", "succeeded", true), class: ledger.OutcomeMaybeSent, state: lookupErr},
		{name: "unknown status", body: piObj("pi_1", "requires_something_new"), class: ledger.OutcomeMaybeSent, state: lookupErr},
	}
	captureRows := []row{
		{name: "requires_payment_method", body: piObj("pi_1", "requires_payment_method"), class: ledger.OutcomeMaybeSent, state: payonce.LookupFailed},
		{name: "requires_confirmation", body: piObj("pi_1", "requires_confirmation"), class: ledger.OutcomeMaybeSent, state: payonce.LookupFailed},
		{name: "requires_action", body: piObj("pi_1", "requires_action"), class: ledger.OutcomeMaybeSent, state: payonce.LookupFailed},
		{name: "processing", body: piObj("pi_1", "processing"), class: ledger.OutcomeSuccess, proc: true, state: payonce.LookupProcessing},
		// Still only authorized: the capture did not take effect.
		{name: "requires_capture", body: piObj("pi_1", "requires_capture", "amount_capturable", 1999), class: ledger.OutcomeMaybeSent, state: payonce.LookupNotFound},
		{name: "succeeded", body: piObj("pi_1", "succeeded", "amount_received", 1999), class: ledger.OutcomeSuccess, state: payonce.LookupSucceeded},
		{name: "succeeded without amount_received", body: piObj("pi_1", "succeeded"), class: ledger.OutcomeMaybeSent, state: lookupErr},
		{name: "canceled authorized", body: piObj("pi_1", "canceled", "latest_charge", ch), class: ledger.OutcomeMaybeSent, state: payonce.LookupFailed, code: "payment_intent_unexpected_state"},
		{name: "canceled never confirmed", body: piObj("pi_1", "canceled"), class: ledger.OutcomeMaybeSent, state: payonce.LookupFailed, code: "payment_intent_unexpected_state"},
		{name: "unknown status", body: piObj("pi_1", "requires_something_new"), class: ledger.OutcomeMaybeSent, state: lookupErr},
	}
	cancelRows := []row{
		{name: "requires_payment_method", body: piObj("pi_1", "requires_payment_method"), class: ledger.OutcomeMaybeSent, state: payonce.LookupNotFound},
		{name: "requires_confirmation", body: piObj("pi_1", "requires_confirmation"), class: ledger.OutcomeMaybeSent, state: payonce.LookupNotFound},
		{name: "requires_action", body: piObj("pi_1", "requires_action"), class: ledger.OutcomeMaybeSent, state: payonce.LookupNotFound},
		{name: "processing", body: piObj("pi_1", "processing"), class: ledger.OutcomeMaybeSent, state: payonce.LookupNotFound},
		{name: "requires_capture", body: piObj("pi_1", "requires_capture", "amount_capturable", 1999), class: ledger.OutcomeMaybeSent, state: payonce.LookupNotFound},
		// Captured: it can no longer be canceled.
		{name: "succeeded", body: piObj("pi_1", "succeeded", "amount_received", 1999), class: ledger.OutcomeMaybeSent, state: payonce.LookupFailed, code: "payment_intent_unexpected_state"},
		{name: "canceled authorized", body: piObj("pi_1", "canceled", "cancellation_reason", "requested_by_customer", "latest_charge", ch), class: ledger.OutcomeSuccess, state: payonce.LookupSucceeded},
		{name: "canceled never confirmed", body: piObj("pi_1", "canceled"), class: ledger.OutcomeSuccess, state: payonce.LookupSucceeded},
		{name: "unknown status", body: piObj("pi_1", "requires_something_new"), class: ledger.OutcomeMaybeSent, state: lookupErr},
	}
	refundRows := []row{
		{name: "pending", body: refundObj("re_1", "pending"), class: ledger.OutcomeSuccess, proc: true, state: payonce.LookupProcessing},
		{name: "requires_action", body: refundObj("re_1", "requires_action"), class: ledger.OutcomeSuccess, proc: true, state: payonce.LookupProcessing},
		{name: "succeeded", body: refundObj("re_1", "succeeded"), class: ledger.OutcomeSuccess, state: payonce.LookupSucceeded},
		{name: "failed", body: refundObj("re_1", "failed", "failure_reason", "lost_or_stolen_card"), class: ledger.OutcomeRefused, state: payonce.LookupFailed, code: "lost_or_stolen_card"},
		{name: "canceled", body: refundObj("re_1", "canceled"), class: ledger.OutcomeRefused, state: payonce.LookupFailed, code: "refund_canceled"},
		{name: "unknown status", body: refundObj("re_1", "weird"), class: ledger.OutcomeMaybeSent, state: lookupErr},
	}

	for _, kind := range []struct {
		kind payonce.Kind
		rows []row
	}{
		{kind: payonce.KindCharge, rows: chargeRows},
		{kind: payonce.KindCapture, rows: captureRows},
		{kind: payonce.KindCancel, rows: cancelRows},
		{kind: payonce.KindRefund, rows: refundRows},
	} {
		for _, tc := range kind.rows {
			t.Run(string(kind.kind)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				q := lookupQuery(kind.kind, "pi_1", "")
				send := payonce.SendRequest{OperationID: q.OperationID, Key: q.Key, Request: q.Request}

				o := b.P.Classify(send, 200, testkit.Header("Request-Id", "req_1"), []byte(tc.body))
				require.Equal(t, tc.class, o.Class, "Classify: %s", o.Message)
				require.Equal(t, tc.proc, o.Processing, "Processing")
				require.Empty(t, o.Contradiction)
				if tc.code != "" && o.Class == ledger.OutcomeRefused {
					require.Equal(t, tc.code, o.Code)
				}

				switch kind.kind {
				case payonce.KindCharge:
					q.ProviderRef = "pi_1"
					getOK(t, b, base+"/v1/payment_intents/pi_1", 200, tc.body)
				case payonce.KindRefund:
					getOK(t, b, base+"/v1/refunds", 200, refundList(false, tc.body))
				default:
					getOK(t, b, base+"/v1/payment_intents/pi_1", 200, tc.body)
				}
				if tc.charge != "" {
					getOK(t, b, base+"/v1/charges/"+ch, 200, tc.charge)
				}
				res, err := b.P.Lookup(context.Background(), b.HC, q)
				if tc.state == lookupErr {
					require.Error(t, err)
					return
				}
				require.NoError(t, err)
				require.Equal(t, tc.state, res.State, "Lookup: %s", res.Message)
				require.Empty(t, res.Contradiction)
				require.Zero(t, res.Lag, "read by id")
				if tc.code != "" && res.State == payonce.LookupFailed {
					require.Equal(t, tc.code, res.Code)
				}
				if tc.state == payonce.LookupNotFound {
					require.Empty(t, res.Refs)
				} else {
					require.NotEmpty(t, res.Refs)
				}

				// The two readings agree wherever Classify decided.
				switch o.Class {
				case ledger.OutcomeSuccess:
					want := payonce.LookupSucceeded
					if o.Processing {
						want = payonce.LookupProcessing
					}
					require.Equal(t, want, res.State)
				case ledger.OutcomeRefused:
					require.Equal(t, payonce.LookupFailed, res.State)
				}
			})
		}
	}
}

// A canceled PaymentIntent's charge that cannot be read leaves the lookup
// unanswered: never "failed" (which would let a resend charge again) nor
// "succeeded" on a guess.
func TestLookupCanceledChargeUnreadable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{name: "missing", status: 404, body: `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such charge: 'ch_1'"}}`},
		{name: "500", status: 500, body: `{"error":{"type":"api_error","message":"boom"}}`},
		{name: "not a charge", status: 200, body: refundObj("ch_1", "succeeded")},
		{name: "another charge", status: 200, body: chargeObj("ch_2", "pi_1", "succeeded", true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			getOK(t, b, base+"/v1/payment_intents/pi_1", 200, piObj("pi_1", "canceled", "latest_charge", "ch_1"))
			getOK(t, b, base+"/v1/charges/ch_1", tc.status, tc.body)
			res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", "pi_1"))
			require.Error(t, err)
			require.Equal(t, payonce.LookupResult{}, res)
			require.Equal(t, 2, b.MT.GetTotalCallCount())
			require.Equal(t, 1, b.MT.GetCallCountInfo()[http.MethodGet+" "+base+"/v1/charges/ch_1"])
		})
	}
}

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
		{"requires_payment_method", piObj("pi_1", "requires_payment_method", "latest_charge", ch, "last_payment_error", lpe), "", ledger.OutcomeRefused, false, payonce.LookupFailed, "card_declined"},
		{"requires_confirmation", piObj("pi_1", "requires_confirmation"), "", ledger.OutcomeRefused, false, payonce.LookupFailed, "requires_confirmation"},
		{"requires_action", piObj("pi_1", "requires_action"), "", ledger.OutcomeRefused, false, payonce.LookupFailed, "requires_action"},
		{"processing", piObj("pi_1", "processing", "latest_charge", ch), "", ledger.OutcomeSuccess, true, payonce.LookupProcessing, ""},
		{"requires_capture", piObj("pi_1", "requires_capture", "amount_capturable", 1999, "latest_charge", ch), "", ledger.OutcomeSuccess, false, payonce.LookupSucceeded, ""},
		{"succeeded", piObj("pi_1", "succeeded", "amount_received", 1999, "latest_charge", ch), "", ledger.OutcomeSuccess, false, payonce.LookupSucceeded, ""},
		// Canceled before any confirmation: latest_charge is null.
		{"canceled never confirmed", piObj("pi_1", "canceled", "cancellation_reason", "abandoned"), "", ledger.OutcomeRefused, false, payonce.LookupFailed, "canceled"},
		// Canceled after a decline: the latest charge failed.
		{"canceled after decline", piObj("pi_1", "canceled", "cancellation_reason", "abandoned", "latest_charge", ch), declinedCh, ledger.OutcomeMaybeSent, false, payonce.LookupFailed, ""},
		// Authorized (requires_capture), then released: the charge succeeded.
		{"canceled authorized requested_by_customer", piObj("pi_1", "canceled", "capture_method", "manual", "cancellation_reason", "requested_by_customer", "latest_charge", ch), auth, ledger.OutcomeMaybeSent, false, payonce.LookupSucceeded, ""},
		{"canceled authorized abandoned", piObj("pi_1", "canceled", "capture_method", "manual", "cancellation_reason", "abandoned", "latest_charge", ch), auth, ledger.OutcomeMaybeSent, false, payonce.LookupSucceeded, ""},
		{"canceled authorized duplicate", piObj("pi_1", "canceled", "capture_method", "manual", "cancellation_reason", "duplicate", "latest_charge", ch), auth, ledger.OutcomeMaybeSent, false, payonce.LookupSucceeded, ""},
		{"canceled authorized fraudulent", piObj("pi_1", "canceled", "capture_method", "manual", "cancellation_reason", "fraudulent", "latest_charge", ch), auth, ledger.OutcomeMaybeSent, false, payonce.LookupSucceeded, ""},
		{"canceled authorization expired", piObj("pi_1", "canceled", "capture_method", "manual", "cancellation_reason", "automatic", "latest_charge", ch), auth, ledger.OutcomeMaybeSent, false, payonce.LookupSucceeded, ""},
		{"canceled authorized no reason", piObj("pi_1", "canceled", "capture_method", "manual", "latest_charge", ch), auth, ledger.OutcomeMaybeSent, false, payonce.LookupSucceeded, ""},
		// The latest charge expanded in the answer decides at once.
		{"canceled authorized charge expanded", piObj("pi_1", "canceled", "latest_charge", rawJSON(auth)), "", ledger.OutcomeSuccess, false, payonce.LookupSucceeded, ""},
		{"canceled declined charge expanded", piObj("pi_1", "canceled", "latest_charge", rawJSON(declinedCh)), "", ledger.OutcomeRefused, false, payonce.LookupFailed, "canceled"},
		// API versions before 2022-11-15 embed the charges instead.
		{"canceled authorized old API", piObj("pi_1", "canceled", "charges", oldAPI(auth)), "", ledger.OutcomeSuccess, false, payonce.LookupSucceeded, ""},
		{"canceled declined old API", piObj("pi_1", "canceled", "charges", oldAPI(declinedCh)), "", ledger.OutcomeRefused, false, payonce.LookupFailed, "canceled"},
		{"canceled no charge old API", piObj("pi_1", "canceled", "charges", oldAPI()), "", ledger.OutcomeRefused, false, payonce.LookupFailed, "canceled"},
		// An embedded list without a paid charge does not hide a latest
		// charge that decides.
		{"canceled charges list and latest_charge", piObj("pi_1", "canceled", "charges", oldAPI(declinedCh), "latest_charge", ch), auth, ledger.OutcomeMaybeSent, false, payonce.LookupSucceeded, ""},
		// Canceled while processing, the charge still pending: money may
		// still move.
		{"canceled charge pending", piObj("pi_1", "canceled", "latest_charge", ch), pendingCh, ledger.OutcomeMaybeSent, false, payonce.LookupProcessing, ""},
		{"canceled charge of another PaymentIntent", piObj("pi_1", "canceled", "latest_charge", ch), chargeObj(ch, "pi_other", "succeeded", true), ledger.OutcomeMaybeSent, false, lookupErr, ""},
		{"unknown status", piObj("pi_1", "requires_something_new"), "", ledger.OutcomeMaybeSent, false, lookupErr, ""},
	}
	captureRows := []row{
		{"requires_payment_method", piObj("pi_1", "requires_payment_method"), "", ledger.OutcomeMaybeSent, false, payonce.LookupFailed, ""},
		{"requires_confirmation", piObj("pi_1", "requires_confirmation"), "", ledger.OutcomeMaybeSent, false, payonce.LookupFailed, ""},
		{"requires_action", piObj("pi_1", "requires_action"), "", ledger.OutcomeMaybeSent, false, payonce.LookupFailed, ""},
		{"processing", piObj("pi_1", "processing"), "", ledger.OutcomeSuccess, true, payonce.LookupProcessing, ""},
		// Still only authorized: the capture did not take effect.
		{"requires_capture", piObj("pi_1", "requires_capture", "amount_capturable", 1999), "", ledger.OutcomeMaybeSent, false, payonce.LookupNotFound, ""},
		{"succeeded", piObj("pi_1", "succeeded", "amount_received", 1999), "", ledger.OutcomeSuccess, false, payonce.LookupSucceeded, ""},
		{"succeeded without amount_received", piObj("pi_1", "succeeded"), "", ledger.OutcomeMaybeSent, false, lookupErr, ""},
		{"canceled authorized", piObj("pi_1", "canceled", "latest_charge", ch), "", ledger.OutcomeMaybeSent, false, payonce.LookupFailed, "payment_intent_unexpected_state"},
		{"canceled never confirmed", piObj("pi_1", "canceled"), "", ledger.OutcomeMaybeSent, false, payonce.LookupFailed, "payment_intent_unexpected_state"},
		{"unknown status", piObj("pi_1", "requires_something_new"), "", ledger.OutcomeMaybeSent, false, lookupErr, ""},
	}
	cancelRows := []row{
		{"requires_payment_method", piObj("pi_1", "requires_payment_method"), "", ledger.OutcomeMaybeSent, false, payonce.LookupNotFound, ""},
		{"requires_confirmation", piObj("pi_1", "requires_confirmation"), "", ledger.OutcomeMaybeSent, false, payonce.LookupNotFound, ""},
		{"requires_action", piObj("pi_1", "requires_action"), "", ledger.OutcomeMaybeSent, false, payonce.LookupNotFound, ""},
		{"processing", piObj("pi_1", "processing"), "", ledger.OutcomeMaybeSent, false, payonce.LookupNotFound, ""},
		{"requires_capture", piObj("pi_1", "requires_capture", "amount_capturable", 1999), "", ledger.OutcomeMaybeSent, false, payonce.LookupNotFound, ""},
		// Captured: it can no longer be canceled.
		{"succeeded", piObj("pi_1", "succeeded", "amount_received", 1999), "", ledger.OutcomeMaybeSent, false, payonce.LookupFailed, "payment_intent_unexpected_state"},
		{"canceled authorized", piObj("pi_1", "canceled", "cancellation_reason", "requested_by_customer", "latest_charge", ch), "", ledger.OutcomeSuccess, false, payonce.LookupSucceeded, ""},
		{"canceled never confirmed", piObj("pi_1", "canceled"), "", ledger.OutcomeSuccess, false, payonce.LookupSucceeded, ""},
		{"unknown status", piObj("pi_1", "requires_something_new"), "", ledger.OutcomeMaybeSent, false, lookupErr, ""},
	}
	refundRows := []row{
		{"pending", refundObj("re_1", "pending"), "", ledger.OutcomeSuccess, true, payonce.LookupProcessing, ""},
		{"requires_action", refundObj("re_1", "requires_action"), "", ledger.OutcomeSuccess, true, payonce.LookupProcessing, ""},
		{"succeeded", refundObj("re_1", "succeeded"), "", ledger.OutcomeSuccess, false, payonce.LookupSucceeded, ""},
		{"failed", refundObj("re_1", "failed", "failure_reason", "lost_or_stolen_card"), "", ledger.OutcomeRefused, false, payonce.LookupFailed, "lost_or_stolen_card"},
		{"canceled", refundObj("re_1", "canceled"), "", ledger.OutcomeRefused, false, payonce.LookupFailed, "refund_canceled"},
		{"unknown status", refundObj("re_1", "weird"), "", ledger.OutcomeMaybeSent, false, lookupErr, ""},
	}

	for _, kind := range []struct {
		kind payonce.Kind
		rows []row
	}{
		{payonce.KindCharge, chargeRows},
		{payonce.KindCapture, captureRows},
		{payonce.KindCancel, cancelRows},
		{payonce.KindRefund, refundRows},
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
		{"missing", 404, `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such charge: 'ch_1'"}}`},
		{"500", 500, `{"error":{"type":"api_error","message":"boom"}}`},
		{"not a charge", 200, refundObj("ch_1", "succeeded")},
		{"another charge", 200, chargeObj("ch_2", "pi_1", "succeeded", true)},
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

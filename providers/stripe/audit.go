package stripe

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/payonce/payonce"
)

// DefaultAuditRate is how many requests per second an audit's listing
// sends at most. Stripe allows 25 requests per second to one endpoint
// (GET /v1/payment_intents is one, GET /v1/refunds another) in live mode
// and in a sandbox, and 25 operations per second in all for a sandbox
// (100 in live mode) ("Rate limits",
// https://docs.stripe.com/rate-limits), and asks background jobs to keep
// "to a subset of the maximum" so that live charges still succeed
// (https://support.stripe.com/questions/rate-limit-error-when-creating-bulk-api-requests).
// 10 leaves more than half of the smallest of those limits (a sandbox's
// whole account) to the charges the service keeps making during an
// audit; an audit of a million PaymentIntents then reads its 10,000 pages
// in about 17 minutes.
const DefaultAuditRate = 10

// DefaultAuditMargin is the Margin of AuditInfo: how far outside the
// period the engine lists Stripe's objects. Stripe dates an object
// (created) by its own clock when the request reaches it; the ledger
// dates the operation by this host's clock before the attempt, and an
// attempt may reach Stripe late (retries within one attempt, a lease
// taken over, a resend after a lookup). Ten minutes covers the client's
// attempt timeouts and retries with room for clock skew.
const DefaultAuditMargin = 10 * time.Minute

// auditDirections is AuditInfo.Directions.
const auditDirections = "provider → ledger: PaymentIntents (charges), Refunds and Disputes by created, " +
	"read with GET /v1/payment_intents, GET /v1/refunds and GET /v1/disputes (lists, not delayed like search); " +
	"a dispute whose funds are withdrawn (needs_response, under_review, lost) shows its PaymentIntent reversed " +
	"as of the dispute's created, inquiries (warning_*) and won or prevented disputes show nothing; " +
	"ledger → provider: charges and refunds that succeeded. Captures and cancels create no object " +
	"of their own at Stripe (they change the PaymentIntent's status), so they are compared through " +
	"their charge's PaymentIntent only."

// AuditInfo says what an audit of Stripe compares: the PaymentIntents and
// Refunds created in the period (ListObjects), and every charge and refund
// of the ledger that succeeded must be among them. Captures and cancels
// act on the charge's PaymentIntent and create no object of their own
// (https://docs.stripe.com/api/payment_intents/capture,
// https://docs.stripe.com/api/payment_intents/cancel: both return the
// PaymentIntent), so they are not ListedKinds: what they did shows in the
// PaymentIntent's status (a canceled authorization is AuditCanceled).
func (p *Provider) AuditInfo() payonce.AuditInfo {
	return payonce.AuditInfo{
		ListedKinds: []payonce.Kind{payonce.KindCharge, payonce.KindRefund},
		Margin:      DefaultAuditMargin,
		Directions:  auditDirections,
	}
}

var _ payonce.AuditLister = (*Provider)(nil)

// ListObjects lists, with GETs only, the PaymentIntents, then the
// Refunds, then the Disputes Stripe created in [q.From, q.To), each page
// of up to 100 (GET /v1/payment_intents, GET /v1/refunds and
// GET /v1/disputes with created[gte] and created[lt], limit=100,
// starting_after while has_more:
// https://docs.stripe.com/api/payment_intents/list,
// https://docs.stripe.com/api/refunds/list ("created: Only return refunds
// that were created during the given date interval"),
// https://docs.stripe.com/api/disputes/list (the same filters: charge,
// payment_intent, created, ending_before, limit, starting_after),
// https://docs.stripe.com/api/pagination). Stripe's lists "aren't subject
// to the availability delays" of search (https://docs.stripe.com/search,
// Data freshness): an object exists in the list as soon as it exists.
//
// A Dispute is not an object of payonce's: it is what became of a
// charge after it settled, which no webhook may have told the ledger
// (auditDispute). A dispute whose funds are withdrawn yields its
// PaymentIntent again, reversed, dated by the dispute's created, so that
// the engine takes it as the PaymentIntent's latest state
// (payonce.AuditLister: an object yielded more than once counts once, in
// its row with the latest Created).
//
// Stripe's created is whole seconds; an object is in the period when
// time.Unix(created) is, so From and To are rounded up to the second in
// the query. A canceled PaymentIntent whose answer does not tell whether
// it was authorized first has its latest charge read
// (GET /v1/charges/{id}), as Lookup does.
//
// Every request waits its turn under Config.AuditRate (DefaultAuditRate
// per second). hc is the client's read path, which retries a 429 or a 5xx
// with its backoff; an error that remains (after those retries) stops the
// listing and is returned, an *APIError when Stripe answered.
func (p *Provider) ListObjects(ctx context.Context, hc payonce.HTTPDoer, q payonce.AuditQuery, yield func(payonce.AuditObject) error) error {
	switch {
	case q.From.IsZero():
		return fmt.Errorf("stripe: audit: AuditQuery.From is zero; give the start of the period")
	case q.To.IsZero():
		return fmt.Errorf("stripe: audit: AuditQuery.To is zero; give the end of the period")
	case !q.From.Before(q.To):
		return fmt.Errorf("stripe: audit: AuditQuery.From (%s) is not before AuditQuery.To (%s)", q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
	case q.Report != nil:
		return fmt.Errorf("stripe: audit: AuditQuery.Report is set, but a Stripe audit lists objects through the API and reads no report")
	}
	// One limiter for the listing, not for the Provider: the Provider
	// holds no mutable state, and two audits at once are an operator's
	// choice (each keeps to the rate).
	a := &auditPager{p: p, hc: hc, lim: rate.NewLimiter(p.auditRate, 1), gte: ceilUnix(q.From), lt: ceilUnix(q.To)}
	if err := auditList(ctx, a, "/v1/payment_intents", objPaymentIntent, nil, func(pi paymentIntent) error {
		obj, err := p.auditIntent(ctx, a, pi)
		if err != nil {
			return err
		}
		return yield(obj)
	}); err != nil {
		return err
	}
	if err := auditList(ctx, a, "/v1/refunds", objRefund, nil, func(rf refund) error {
		obj, err := p.auditRefund(rf)
		if err != nil {
			return err
		}
		return yield(obj)
	}); err != nil {
		return err
	}
	// Each dispute's PaymentIntent comes expanded in the page ("Expansions
	// on list requests start with the data property",
	// https://docs.stripe.com/api/expanding_objects): its metadata names
	// the operation, and no request per dispute is needed.
	expand := url.Values{"expand[]": {"data.payment_intent"}}
	return auditList(ctx, a, "/v1/disputes", objDispute, expand, func(d dispute) error {
		obj, ok, err := p.auditDispute(ctx, a, d)
		if err != nil || !ok {
			return err
		}
		return yield(obj)
	})
}

// auditPager holds one listing's pacing and window.
type auditPager struct {
	p       *Provider
	hc      payonce.HTTPDoer
	lim     *rate.Limiter
	gte, lt int64
}

// wait takes the next request's turn under the rate. The time comes from
// Config.Now and the wait from p.sleep, so tests pace on a manual clock.
func (a *auditPager) wait(ctx context.Context) error {
	now := a.p.now()
	r := a.lim.ReserveN(now, 1)
	if !r.OK() {
		return fmt.Errorf("stripe: audit: rate limiter refused a request")
	}
	if d := r.DelayFrom(now); d > 0 {
		if err := a.p.sleep(ctx, d); err != nil {
			r.CancelAt(now)
			return err
		}
	}
	return nil
}

// auditList pages through one list endpoint over the pager's window and
// calls each for every object, newest first. extra are parameters every
// page asks for besides the window and the paging (expand[]).
func auditList[T object](ctx context.Context, a *auditPager, path, item string, extra url.Values, each func(T) error) error {
	after := ""
	for {
		if err := a.wait(ctx); err != nil {
			return err
		}
		query := url.Values{
			"created[gte]": {strconv.FormatInt(a.gte, 10)},
			"created[lt]":  {strconv.FormatInt(a.lt, 10)},
			"limit":        {strconv.Itoa(listPageSize)},
		}
		if after != "" {
			query.Set("starting_after", after)
		}
		for k, v := range extra {
			query[k] = v
		}
		res, err := getList[T](ctx, a.p, a.hc, path, query, objList, item, "list")
		if err != nil {
			// An *APIError names the method and path ("stripe: GET
			// /v1/refunds: HTTP 429 ..."); the transport's errors too.
			return err
		}
		for _, v := range res.Data {
			if err := each(v); err != nil {
				return err
			}
		}
		if !res.HasMore {
			return nil
		}
		after = res.Data[len(res.Data)-1].objectID()
	}
}

// ceilUnix is t in Unix seconds, rounded up: the first whole second not
// before t, so that created >= ceilUnix(From) is time.Unix(created) >= From.
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.After(time.Unix(s, 0)) {
		s++
	}
	return s
}

// auditIntent is a listed PaymentIntent as the audit compares it. A
// canceled PaymentIntent whose verdict needs its latest charge has it read
// (paced like the lists).
func (p *Provider) auditIntent(ctx context.Context, a *auditPager, pi paymentIntent) (payonce.AuditObject, error) {
	v := chargeVerdict(pi, nil)
	if v.needCharge != "" {
		if err := a.wait(ctx); err != nil {
			return payonce.AuditObject{}, err
		}
		ch, err := p.getCharge(ctx, a.hc, v.needCharge)
		if err != nil {
			return payonce.AuditObject{}, err
		}
		v = chargeVerdict(pi, &ch)
	}
	state, err := intentAuditState(pi, v)
	if err != nil {
		return payonce.AuditObject{}, err
	}
	return auditObject(pi.ID, pi.Metadata, payonce.KindCharge, state, pi.Status, pi.Amount, pi.Currency, pi.Created, ""), nil
}

// intentAuditState maps a PaymentIntent's verdict (chargeVerdict, the
// table Classify and Lookup use) to the audit's states:
//
//	succeeded, requires_capture              succeeded (captured, or authorized)
//	processing                               processing
//	requires_payment_method                  failed (declined, or never confirmed)
//	requires_action, requires_confirmation   failed: it waits for the customer or another confirm, and payonce never hands out the client secret, so nobody completes it
//	canceled, authorized first               canceled (the authorization was released: by a cancel, or by Stripe when it expired)
//	canceled, never authorized               failed (no money moved)
//	canceled, its charge pending             processing
//	anything else                            an error: the answer is not known
//
// A refunded or disputed PaymentIntent stays succeeded at Stripe: its
// refunds are Refunds, listed on their own, and its disputes are Disputes
// (auditDispute).
func intentAuditState(pi paymentIntent, v verdict) (payonce.AuditState, error) {
	if v.unknown != "" {
		return "", fmt.Errorf("stripe: audit: PaymentIntent %s: %s, which the adapter does not know", pi.ID, v.unknown)
	}
	if pi.Status == piCanceled && v.state == payonce.LookupSucceeded {
		return payonce.AuditCanceled, nil
	}
	return lookupAuditState(v.state), nil
}

// auditRefund is a listed Refund as the audit compares it (refundVerdict):
//
//	succeeded                  succeeded
//	pending, requires_action   processing
//	failed, canceled           failed (a refund that failed after it succeeded is failed now)
//	anything else              an error
func (p *Provider) auditRefund(rf refund) (payonce.AuditObject, error) {
	v := refundVerdict(rf)
	if v.unknown != "" {
		return payonce.AuditObject{}, fmt.Errorf("stripe: audit: refund %s: %s, which the adapter does not know", rf.ID, v.unknown)
	}
	return auditObject(rf.ID, rf.Metadata, payonce.KindRefund, lookupAuditState(v.state), rf.Status, rf.Amount, rf.Currency, rf.Created, rf.PaymentIntent.ID), nil
}

// lookupAuditState is a decided verdict's state as an audit state.
func lookupAuditState(s payonce.LookupState) payonce.AuditState {
	switch s {
	case payonce.LookupSucceeded:
		return payonce.AuditSucceeded
	case payonce.LookupProcessing:
		return payonce.AuditProcessing
	default:
		return payonce.AuditFailed
	}
}

// auditObject builds an AuditObject. The operation, key and kind come from
// payonce's metadata; an object without payonce_op is not payonce's and is
// of the kind its type says (def). A payonce_kind that is no kind is left
// for def too: the metadata may have been edited by hand.
func auditObject(id string, md metadata, def payonce.Kind, state payonce.AuditState, status string, amount int64, currency string, created int64, paymentRef string) payonce.AuditObject {
	o := payonce.AuditObject{Ref: id, Kind: def, State: state, Status: status, Amount: amount,
		Currency: strings.ToUpper(currency), Created: time.Unix(created, 0).UTC(), PaymentRef: paymentRef}
	if op := md.get(MetaOperation); op != "" {
		o.OperationID, o.Key = op, md.get(MetaKey)
		if k := payonce.Kind(md.get(MetaKind)); k != "" && k.Validate() == nil {
			o.Kind = k
		}
	}
	return o
}

// Dispute statuses (https://docs.stripe.com/api/disputes/object, status:
// warning_needs_response, warning_under_review, warning_closed,
// needs_response, under_review, won, lost, or prevented; charge_refunded
// on older API versions: stripe-go's DisputeStatusChargeRefunded).
const (
	disputeWarningNeedsResponse = "warning_needs_response"
	disputeWarningUnderReview   = "warning_under_review"
	disputeWarningClosed        = "warning_closed"
	disputeNeedsResponse        = "needs_response"
	disputeUnderReview          = "under_review"
	disputeWon                  = "won"
	disputeLost                 = "lost"
	disputePrevented            = "prevented"
	disputeChargeRefunded       = "charge_refunded"
)

// disputeWithdrawn says, for a dispute's status, whether the disputed
// funds are out of the merchant's balance now; known is false for a
// status the adapter does not know.
//
//	needs_response, under_review   withdrawn: a chargeback "immediately reverses the payment", and "Stripe debits your balance for the payment amount and dispute fee" (https://docs.stripe.com/disputes)
//	lost                           withdrawn for good: "the cardholder's payment remains refunded" (https://stripe.com/docs/disputes, an earlier version of the page)
//	won                            returned: "If the dispute is found in your favor, the disputed amount and fee is returned" (the same)
//	warning_*                      an inquiry: "Unlike a formal dispute, no funds have been withdrawn" (https://stripe.com/docs/disputes, Inquiries and retrievals); one that escalates becomes needs_response
//	prevented                      stopped before it became a chargeback (https://docs.stripe.com/changelog/basil/2025-08-27/add-preventions-to-dispute)
//	charge_refunded                older API versions: the merchant refunded the charge; the refund is a Refund, listed on its own
//
// Open disputes count, not only lost ones: the list is by created, so a
// period's audit (scheduled an hour after the period, say) sees a dispute
// once, and almost always open (a dispute is decided weeks later); and
// the money is out of the balance from the start. A ledger that still
// says succeeded then missed charge.dispute.created, whose target is the
// same reversal (ParseWebhook), while the evidence is still due.
func disputeWithdrawn(status string) (withdrawn, known bool) {
	switch status {
	case disputeNeedsResponse, disputeUnderReview, disputeLost:
		return true, true
	case disputeWon, disputeWarningNeedsResponse, disputeWarningUnderReview, disputeWarningClosed,
		disputePrevented, disputeChargeRefunded:
		return false, true
	}
	return false, false
}

// auditDispute is a listed Dispute as the audit compares it: when its
// funds are withdrawn (disputeWithdrawn), its PaymentIntent, reversed
// (ok); otherwise nothing (the PaymentIntent's own row stands). The
// object is the PaymentIntent's (Ref, payonce's metadata, kind, amount and
// currency: what the operation asked for), with Status "dispute_<status>"
// and Created the dispute's created plus a nanosecond: a dispute dated
// the same second as its PaymentIntent still follows it, and the shift is
// below any precision Stripe or a period has.
//
// Nothing is yielded for a dispute of a charge without a PaymentIntent
// (payonce makes every charge as one) nor of a PaymentIntent without
// payonce's metadata: the PaymentIntent is counted unattributed in its
// own row, not twice. The PaymentIntent comes expanded in the page; a
// page that sent its id only (expansion refused or ignored) has it read
// with GET /v1/payment_intents/{id}, paced like the lists. An unknown
// status is an error, as an unknown PaymentIntent status is.
func (p *Provider) auditDispute(ctx context.Context, a *auditPager, d dispute) (payonce.AuditObject, bool, error) {
	withdrawn, known := disputeWithdrawn(d.Status)
	switch {
	case !known:
		return payonce.AuditObject{}, false, fmt.Errorf("stripe: audit: dispute %s: status %q, which the adapter does not know", d.ID, d.Status)
	case !withdrawn || d.PaymentIntent.ID == "":
		return payonce.AuditObject{}, false, nil
	}
	var pi paymentIntent
	if d.PaymentIntent.Object != nil {
		var err error
		if pi, err = decodePaymentIntent(d.PaymentIntent.Object); err != nil {
			return payonce.AuditObject{}, false, fmt.Errorf("stripe: audit: dispute %s: its payment_intent: %w", d.ID, err)
		}
	} else {
		if err := a.wait(ctx); err != nil {
			return payonce.AuditObject{}, false, err
		}
		got, found, err := p.getPaymentIntent(ctx, a.hc, d.PaymentIntent.ID)
		switch {
		case err != nil:
			return payonce.AuditObject{}, false, err
		case !found:
			return payonce.AuditObject{}, false, fmt.Errorf("stripe: audit: dispute %s names PaymentIntent %s, which Stripe does not find", d.ID, d.PaymentIntent.ID)
		}
		pi = got
	}
	if pi.Metadata.get(MetaOperation) == "" {
		return payonce.AuditObject{}, false, nil
	}
	o := auditObject(pi.ID, pi.Metadata, payonce.KindCharge, payonce.AuditReversed, "dispute_"+d.Status, pi.Amount, pi.Currency, d.Created, "")
	o.Created = o.Created.Add(time.Nanosecond)
	return o, true, nil
}

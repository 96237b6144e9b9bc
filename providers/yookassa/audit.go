package yookassa

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// The audit reads YooKassa's own lists of payments and refunds
// (GET /v3/payments, GET /v3/refunds, https://yookassa.ru/developers/api#get_payments_list
// and #get_refunds_list), filtered by created_at.gte / created_at.lt and
// paged with limit=100 and next_cursor
// (https://yookassa.ru/developers/using-api/lists). Both lists hold only
// objects created in the last 3 years (same page). GETs only: the audit
// never creates, captures, cancels or refunds anything.

// DefaultAuditInterval is the pause between two list requests of an audit.
// YooKassa documents a 429 too_many_requests for "the limit of requests
// per unit of time" but not the limit itself
// (https://yookassa.ru/developers/using-api/response-handling/http-codes),
// so the audit keeps to a conservative 5 requests a second.
const DefaultAuditInterval = 200 * time.Millisecond

// Rate limits met during an audit: a 429 too_many_requests (after the
// client's own retries of safe reads) is waited out and the page asked for
// again, at most auditRetries times. The wait is YooKassa's retry_after
// (milliseconds) when the body has one, else twice the last wait, starting
// from the audit interval, and never more than maxAuditWait.
const (
	auditRetries = 5
	maxAuditWait = time.Minute
)

// ykTimeLayout is how YooKassa writes and reads times: ISO 8601, UTC,
// milliseconds.
const ykTimeLayout = "2006-01-02T15:04:05.000Z"

var _ payonce.AuditLister = (*Provider)(nil)

// AuditInfo says what an audit of YooKassa sees: every payment (a charge)
// and every refund created in the period, from YooKassa's lists. A capture
// or cancel is no object of its own at YooKassa (it changes the payment),
// so it is not listed. The margin is Config.LookupMargin (clock skew).
func (p *Provider) AuditInfo() payonce.AuditInfo {
	return payonce.AuditInfo{
		ListedKinds: []payonce.Kind{payonce.KindCharge, payonce.KindRefund},
		Margin:      p.lookupMargin,
		Directions: "provider → ledger and ledger → provider: payments (charges) and refunds by created_at, " +
			"from GET /v3/payments and GET /v3/refunds; captures and cancels are read as the payment's status",
	}
}

// ListObjects lists the payments and the refunds created in [q.From, q.To)
// (GET /v3/payments and GET /v3/refunds with created_at.gte and
// created_at.lt, limit 100, following next_cursor), pausing
// Config.AuditInterval between requests, and calls yield with each as a
// payonce.AuditObject:
//
//   - payment: OperationID, Key and Kind from its payonce_op, payonce_key
//     and payonce_kind metadata (Kind charge when it has none); State from
//     the status as Classify and Lookup read it for a charge (succeeded
//     and waiting_for_capture: succeeded; pending: processing; canceled
//     after authorization, canceled_by_merchant or expired_on_capture:
//     canceled; any other canceled: failed).
//   - refund: OperationID and Key from the markers of its description (or
//     metadata), as Lookup matches refunds; Kind refund; PaymentRef its
//     payment_id; succeeded, pending (processing), canceled (failed).
//
// Amount is amount.value in minor units. A payment partially captured
// shows what was captured, not what was authorized: YooKassa keeps no
// other amount on the payment. A status the adapter does not know, or an
// amount or created_at it cannot read, is an error (*APIError): the audit
// never guesses.
func (p *Provider) ListObjects(ctx context.Context, hc payonce.HTTPDoer, q payonce.AuditQuery, yield func(payonce.AuditObject) error) error {
	if q.From.IsZero() || q.To.IsZero() || !q.From.Before(q.To) {
		return fmt.Errorf("yookassa: audit: the period [%s, %s) is empty; From must be before To", q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
	}
	if q.Report != nil {
		return errors.New("yookassa: audit: YooKassa is audited from its lists; AuditQuery.Report is not read, leave it nil")
	}
	// YooKassa reads times to the millisecond: gte is rounded down and lt
	// up, and what the rounding lets in is filtered out below.
	filter := url.Values{
		"created_at.gte": {q.From.UTC().Truncate(time.Millisecond).Format(ykTimeLayout)},
		"created_at.lt":  {ceilMillis(q.To).UTC().Format(ykTimeLayout)},
	}
	var yieldErr error
	emit := func(o payonce.AuditObject) error {
		if o.Created.Before(q.From) || !o.Created.Before(q.To) {
			return nil
		}
		if yieldErr = yield(o); yieldErr != nil {
			return errStop
		}
		return nil
	}
	opts := listOptions{pace: p.pace}
	err := pageListWith(ctx, p, hc, "/v3/payments", filter, opts, func(pm payment) error {
		if pm.ID == "" || pm.Type != "" {
			return errors.New("list returned an item that is not a payment")
		}
		o, err := p.paymentObject(pm)
		if err != nil {
			return err
		}
		return emit(o)
	})
	if err == nil {
		// The refunds list is paced from its first request: it follows the
		// payments list's last.
		err = p.pace(ctx)
	}
	if err == nil {
		err = pageListWith(ctx, p, hc, "/v3/refunds", filter, opts, func(rf refund) error {
			if rf.ID == "" || rf.Type != "" || rf.PaymentID == "" {
				return errors.New("list returned an item that is not a refund")
			}
			o, err := p.refundObject(rf)
			if err != nil {
				return err
			}
			return emit(o)
		})
	}
	if errors.Is(err, errStop) {
		return yieldErr
	}
	return err
}

// paymentObject reads a listed payment.
func (p *Provider) paymentObject(pm payment) (payonce.AuditObject, error) {
	o := payonce.AuditObject{Ref: pm.ID, Kind: payonce.KindCharge, Status: pm.Status}
	if op := pm.Metadata[MetaOperation]; op != "" {
		o.OperationID, o.Key = op, pm.Metadata[MetaKey]
		if k := payonce.Kind(pm.Metadata[MetaKind]); k.Validate() == nil {
			o.Kind = k
		}
	}
	// The verdict Classify and Lookup give the payment as a charge; a
	// charge whose hold was released afterwards succeeded as a charge, and
	// the audit tells it apart as canceled.
	st := p.chargeState(pm)
	state, err := auditState(st.Verdict, st.Message)
	if err != nil {
		return o, fmt.Errorf("payment %s: %w", pm.ID, err)
	}
	if state == payonce.AuditSucceeded && authorizedThenReleased(pm) {
		state = payonce.AuditCanceled
	}
	o.State = state
	return o, p.readMoneyAndTime(&o, pm.Amount, pm.CreatedAt)
}

// refundObject reads a listed refund.
func (p *Provider) refundObject(rf refund) (payonce.AuditObject, error) {
	o := payonce.AuditObject{Ref: rf.ID, Kind: payonce.KindRefund, Status: rf.Status, PaymentRef: rf.PaymentID}
	if op, key := refundMarks(rf); op != "" {
		o.OperationID, o.Key = op, key
	}
	st := p.refundState(rf)
	state, err := auditState(st.Verdict, st.Message)
	if err != nil {
		return o, fmt.Errorf("refund %s: %w", rf.ID, err)
	}
	o.State = state
	return o, p.readMoneyAndTime(&o, rf.Amount, rf.CreatedAt)
}

// readMoneyAndTime fills the amount (minor units), currency and creation
// time of o.
func (p *Provider) readMoneyAndTime(o *payonce.AuditObject, a amount, created string) error {
	amt, err := parseAmount(a)
	if err != nil {
		return fmt.Errorf("%s %s: %w", o.Kind, o.Ref, err)
	}
	t, err := time.Parse(time.RFC3339Nano, created)
	if err != nil {
		return fmt.Errorf("%s %s: created_at %q is not an ISO 8601 time", o.Kind, o.Ref, created)
	}
	o.Amount, o.Currency, o.Created = amt, a.Currency, t.UTC()
	return nil
}

// auditState turns the verdict states.go gives an object into what an
// audit compares. VerdictNotYet does not occur for a charge or a refund.
func auditState(v adapterkit.Verdict, msg string) (payonce.AuditState, error) {
	switch v {
	case adapterkit.VerdictSucceeded:
		return payonce.AuditSucceeded, nil
	case adapterkit.VerdictProcessing:
		return payonce.AuditProcessing, nil
	case adapterkit.VerdictFailed:
		return payonce.AuditFailed, nil
	}
	return "", fmt.Errorf("%s, which the adapter does not know", msg)
}

// ceilMillis rounds t up to the next whole millisecond.
func ceilMillis(t time.Time) time.Time {
	if r := t.Truncate(time.Millisecond); !r.Equal(t) {
		return r.Add(time.Millisecond)
	}
	return t
}

// pace waits between two list requests of an audit.
func (p *Provider) pace(ctx context.Context) error { return p.wait(ctx, p.auditInterval) }

// paced sends one list request of an audit: after the first, it first
// waits the audit interval; a 429 too_many_requests is waited out
// (retry_after, else a doubling wait) and the request sent again, at most
// auditRetries times.
func (p *Provider) paced(ctx context.Context, page int, pace func(context.Context) error, get func() error) error {
	if page > 0 {
		if err := pace(ctx); err != nil {
			return err
		}
	}
	wait := p.auditInterval
	for try := 0; ; try++ {
		err := get()
		var e *APIError
		if !errors.As(err, &e) || e.HTTPStatus != http.StatusTooManyRequests || try == auditRetries {
			return err
		}
		wait = min(max(2*wait, time.Millisecond), maxAuditWait)
		if ra := e.retryAfter; ra > 0 {
			wait = min(ra, maxAuditWait)
		}
		if err := p.wait(ctx, wait); err != nil {
			return err
		}
	}
}

package paypal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// The audit reads PayPal's Transaction Search API, GET
// /v1/reporting/transactions (https://developer.paypal.com/docs/api/transaction-search/v1/),
// the only PayPal API that lists what happened on an account by date.
//
// The transaction search is for the audit ONLY. Lookup never reads it and
// nothing decides a resend from it: it lags up to three hours ("It takes a
// maximum of three hours for executed transactions to appear in the list
// transactions call", same page) and cannot filter by custom_id, so an
// absence in it proves nothing about a request of the last hours. A resend
// is decided by the repeat of the same PayPal-Request-Id inside its window
// (LookupProvesAbsence is false), never by a search.

const (
	// SearchLag is how far behind the transaction search may be: "It takes
	// a maximum of three hours for executed transactions to appear in the
	// list transactions call"
	// (https://developer.paypal.com/docs/api/transaction-search/v1/). An
	// audit refuses a period (widened by AuditInfo.Margin) that ends less
	// than SearchLag ago: PayPal has not published it whole, and an audit
	// of an incomplete listing would report "no difference" for money it
	// did not see. A scheduled audit needs AuditSchedule.Delay (or
	// riverpayonce's AuditArgs.Delay) of at least SearchLag +
	// DefaultAuditMargin.
	SearchLag = 3 * time.Hour
	// MaxSearchWindow is the longest range one search may ask for: "The
	// maximum supported range is 31 days" (end_date,
	// https://developer.paypal.com/docs/api/transaction-search/v1/). A
	// longer period is listed in windows of at most this length.
	MaxSearchWindow = 31 * 24 * time.Hour
	// DefaultAuditInterval is Config.AuditInterval's default: the least
	// time between two search requests of an audit. PayPal does not
	// publish its rate limits ("PayPal doesn't publish exact rate limits
	// because they vary depending on the API, environment, and
	// circumstances", https://developer.paypal.com/api/rate-limiting), so
	// the audit keeps to a conservative 5 requests a second, as the
	// YooKassa adapter does; with 500 rows a page that is 2,500 rows a
	// second.
	DefaultAuditInterval = 200 * time.Millisecond
	// DefaultAuditMargin is AuditInfo.Margin: how far outside the period
	// the engine lists PayPal's transactions. PayPal dates a transaction
	// (transaction_initiation_date) by its own clock; the ledger dates the
	// operation by this host's, before the attempt, which may reach PayPal
	// late (retries, a lease taken over, a resend).
	DefaultAuditMargin = 10 * time.Minute
)

// Search request parameters.
const (
	// searchPageSize is the largest page_size the search takes ("<= 500",
	// PayPal-TypeScript-Server-SDK doc/controllers/transaction-search.md).
	searchPageSize = 500
	// searchMaxPages bounds the pages of one window: PayPal refuses a
	// window with more rows than it serves (RESULTSET_TOO_LARGE), so a
	// window that claims more pages than this is an answer not to trust.
	searchMaxPages = 1000
	// searchMinWindow is the shortest window the lister splits down to when
	// PayPal answers RESULTSET_TOO_LARGE: below it, the error is returned.
	searchMinWindow = time.Second
	// auditRetries and maxAuditWait: a 429 that remains after the client's
	// own retries of safe reads is waited out (Retry-After, else a
	// doubling wait from the audit interval, at most maxAuditWait) and the
	// page asked for again, at most auditRetries times. PayPal answers
	// "429 ... RATE_LIMIT_REACHED" when it rate limits
	// (https://developer.paypal.com/api/rest/reference/rate-limiting).
	auditRetries = 5
	maxAuditWait = time.Minute
)

// auditDirections is AuditInfo.Directions.
const auditDirections = "provider → ledger: balance-affecting transactions from GET /v1/reporting/transactions " +
	"(at least 3 h old, by transaction_initiation_date): payments received (T00nn: a charge captured at once, or an " +
	"authorization's capture, which carries the authorization's custom_id and so names the charge), refunds (T1107), " +
	"reversals and chargebacks (T1106, T1201: the payment reversed; T1202: restored), a refund's money coming back " +
	"(the refund reversed), attributed by custom_field (or, on a row without one, by the custom_id of the transaction " +
	"it acts on, read by id); " +
	"ledger → provider: refunds that succeeded. Charges are not checked ledger → provider: an authorization is not " +
	"balance-affecting and is not listed until it is captured; captures and cancels carry no custom_id of their own."

var _ payonce.AuditLister = (*Provider)(nil)

// AuditInfo says what an audit of PayPal compares: the balance-affecting
// transactions of the period (ListObjects), and every refund of the
// ledger that succeeded must be among them.
//
// Charges are not ListedKinds. An AUTHORIZE charge's authorization is not
// balance-affecting and appears only once captured, so a succeeded charge
// may rightly have no row in its period; the capture's row names the
// charge (a capture carries its authorization's custom_id: the capture
// request has no custom_id,
// https://developer.paypal.com/docs/api/payments/v2/#authorizations_capture),
// which is how provider → ledger still sees it.
func (p *Provider) AuditInfo() payonce.AuditInfo {
	return payonce.AuditInfo{
		ListedKinds: []payonce.Kind{payonce.KindRefund},
		Margin:      DefaultAuditMargin,
		// The search lags (SearchLag): scheduled audits then keep their
		// periods that far back instead of failing ListObjects' check.
		Lag:        SearchLag,
		Directions: auditDirections,
	}
}

// ListObjects lists, with GETs only, the balance-affecting transactions
// PayPal initiated in [q.From, q.To): GET /v1/reporting/transactions with
// start_date, end_date, fields=transaction_info,
// balance_affecting_records_only=Y, page_size=500 and page=1..total_pages
// (https://developer.paypal.com/docs/api/transaction-search/v1/), in
// windows of at most MaxSearchWindow; a window PayPal finds too large
// (RESULTSET_TOO_LARGE) is split in two and each half listed.
//
// It refuses a period that ends less than SearchLag before Config.Now, and
// a page whose last_refreshed_datetime is before the window's end: PayPal
// has not published that time whole yet (see SearchLag).
//
// Each row becomes an AuditObject (searchObject):
//
//	T00nn, amount > 0   a payment (kind charge): S succeeded, P processing, D failed, V and F succeeded (refunded wholly or partly: the refunds are rows of their own)
//	T1107, amount < 0   a refund, PaymentRef paypal_reference_id: S succeeded, P processing, D failed, V reversed
//	T1107, amount > 0   money of the refund paypal_reference_id coming back (the refund failed after it was paid): that refund again, reversed (S, P, V); D: nothing
//	T1106, T1201        the payment paypal_reference_id again, reversed (S, P); D and V: nothing (the reversal did not stand)
//	T1202               the payment paypal_reference_id again, succeeded (the chargeback was reversed)
//	T1302               the authorization paypal_reference_id, canceled (voided), when PayPal lists it
//
// OperationID is custom_field when it has the form of a payonce operation
// id (a lower-case UUID version 5, payonce.Identity.OperationID); any other
// custom_field is not payonce's (an order the service's own front end
// created) and the row is unattributed. A row that yields another
// transaction (a reversal, a chargeback, a void, a refund's return) and
// carries no custom_field is attributed by reading that transaction by id
// (attribute). Key stays empty: invoice_id is the
// key of whichever request set it, and a capture of an authorization
// carries the capture's invoice_id beside the authorization's custom_id,
// so it names another operation than custom_field does. Amount is the
// absolute transaction_amount in minor units; Created is
// transaction_initiation_date (a reversal's row is dated a nanosecond
// later, so that it is the payment's latest row even in the same second).
//
// Rows of other event codes that are not objects of an operation (fees,
// currency conversions, holds, withdrawals, reauthorizations: see
// searchSkipped) are skipped. A row the adapter cannot read (an unknown
// event code or status, an amount or date it cannot parse, a payment with
// a negative amount) stops nothing: it is yielded unattributed, with the
// reason and its custom_field in Status, so that the audit counts it
// (AuditReport.Unattributed) and lists it on request
// (AuditParams.ListUnattributed).
//
// Requests are paced by Config.AuditInterval (DefaultAuditInterval) and
// carry the adapter's cached OAuth2 access token (fetched, when it must
// be, through Config.HTTPClient: see tokenVia). hc is the
// client's read path, which retries a 429 or a 5xx; a 429 that remains is
// waited out and asked again (auditRetries times); a 401 drops the token
// and asks once more; any other error stops the listing and is returned
// (an *APIError when PayPal answered).
//
// For the audit only: nothing else in the adapter reads the transaction
// search, and no resend is ever decided from it (see SearchLag).
func (p *Provider) ListObjects(ctx context.Context, hc payonce.HTTPDoer, q payonce.AuditQuery, yield func(payonce.AuditObject) error) error {
	// The audit's hc sends GETs only (the engine refuses anything else: an
	// audit must never move money), but an access token is had with a
	// POST. That POST moves no money: it goes through the adapter's own
	// HTTP client (Config.HTTPClient, which fetches the webhook
	// verification's token too), every other request through hc.
	tokens := tokenVia{hc: hc, post: p.cfg.HTTPClient}
	l := &auditLister{p: p, hc: hc, reads: tokens, sleep: adapterkit.Sleep, invalidate: p.tokens.invalidate,
		token: func(ctx context.Context) (token, error) { return p.token(ctx, tokens) }}
	return l.list(ctx, q, yield)
}

// auditLister is one ListObjects call: its pacing and its seams (the
// token, its invalidation and sleep, which the package's tests replace).
type auditLister struct {
	p  *Provider
	hc payonce.HTTPDoer
	// reads sends the reads of a transaction by id (getPayment), which
	// fetch their own token: hc, but the token's POST through
	// Config.HTTPClient (tokenRouter).
	reads      payonce.HTTPDoer
	token      func(ctx context.Context) (token, error)
	invalidate func(gen uint64)
	sleep      func(ctx context.Context, d time.Duration) error
	// last is when the previous request was sent (Config.Now); zero before
	// the first.
	last time.Time
}

// auditInterval is Config.AuditInterval, DefaultAuditInterval when 0 (New
// refuses a negative one).
func (p *Provider) auditInterval() time.Duration {
	if p.cfg.AuditInterval > 0 {
		return p.cfg.AuditInterval
	}
	return DefaultAuditInterval
}

// list checks the period and lists it window by window.
func (l *auditLister) list(ctx context.Context, q payonce.AuditQuery, yield func(payonce.AuditObject) error) error {
	switch {
	case q.From.IsZero() || q.To.IsZero() || !q.From.Before(q.To):
		return fmt.Errorf("paypal: audit: the period [%s, %s) is empty; From must be before To",
			q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
	case q.Report != nil:
		return errors.New("paypal: audit: PayPal is audited from its transaction search; AuditQuery.Report is not read, leave it nil")
	}
	// Refused, not reported: a listing of a period PayPal has not
	// published whole would compare as "nothing differs" while money of
	// its last hours is unseen (SearchLag).
	if ready := q.To.Add(SearchLag); l.p.now().Before(ready) {
		return fmt.Errorf("paypal: audit: the period ends at %s (with the audit margin), less than %v ago; PayPal's "+
			"transaction search may be up to %v behind, so audit it after %s (a scheduled audit needs a Delay of at least %v)",
			q.To.UTC().Format(time.RFC3339), SearchLag, SearchLag, ready.UTC().Format(time.RFC3339), SearchLag+DefaultAuditMargin)
	}
	for from := q.From; from.Before(q.To); {
		// From the whole second below from: pages rounds start_date down
		// and end_date up, and PayPal refuses a range over 31 days.
		to := from.Truncate(time.Second).Add(MaxSearchWindow)
		if to.After(q.To) {
			to = q.To
		}
		if err := l.window(ctx, from, to, yield); err != nil {
			return err
		}
		from = to
	}
	return nil
}

// errTooLarge: PayPal refused a window as RESULTSET_TOO_LARGE.
var errTooLarge = errors.New("paypal: RESULTSET_TOO_LARGE")

// window lists the rows initiated in [from, to), all its pages; a window
// PayPal finds too large is listed as two halves.
func (l *auditLister) window(ctx context.Context, from, to time.Time, yield func(payonce.AuditObject) error) error {
	err := l.pages(ctx, from, to, yield)
	if !errors.Is(err, errTooLarge) {
		return err
	}
	// "Result set size is greater than the maximum limit. Change the filter
	// criteria and try again."
	// (https://developer.paypal.com/api/transaction-search/v1/errors/resultset_too_large):
	// narrower dates are the filter an audit can change. PayPal refuses the
	// first page; should it refuse a later one, the rows already yielded
	// are yielded again by the halves, which the engine counts once
	// (payonce.AuditLister: an object yielded more than once counts once).
	half := to.Sub(from) / 2
	if half < searchMinWindow {
		return fmt.Errorf("paypal: audit: PayPal answers RESULTSET_TOO_LARGE for the window [%s, %s), which cannot be split further",
			from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano))
	}
	mid := from.Add(half).Truncate(time.Second)
	if !mid.After(from) {
		mid = from.Add(half)
	}
	if err := l.window(ctx, from, mid, yield); err != nil {
		return err
	}
	return l.window(ctx, mid, to, yield)
}

// pages reads every page of one window and yields its objects. Rows
// outside [from, to) (start_date is rounded down and end_date up to the
// second) are left to the window they belong to.
func (l *auditLister) pages(ctx context.Context, from, to time.Time, yield func(payonce.AuditObject) error) error {
	query := url.Values{
		"start_date": {from.UTC().Truncate(time.Second).Format(time.RFC3339)},
		"end_date":   {ceilSecond(to).UTC().Format(time.RFC3339)},
		// transaction_info holds every field the audit reads; the other
		// groups (payer, shipping, cart) are personal data it has no use for.
		"fields": {"transaction_info"},
		// Y, PayPal's default: "The response includes only balance
		// transactions". A transaction ID is not unique across
		// balance-affecting and non-balance-affecting rows (transaction_id,
		// same page); balance-affecting rows are the ones that moved money.
		"balance_affecting_records_only": {"Y"},
		"page_size":                      {strconv.Itoa(searchPageSize)},
	}
	for page, total := 1, 1; page <= total; page++ {
		query.Set("page", strconv.Itoa(page))
		res, err := l.get(ctx, query)
		if err != nil {
			return err
		}
		// last_refreshed_datetime is how far PayPal's data is complete; a
		// window that ends after it holds rows PayPal has not published
		// (AWS Glue's PayPal connector: "If the last_refreshed_datetime is
		// less than the requested end_date then, the end_date becomes
		// equal to the last_refreshed_datetime",
		// https://docs.aws.amazon.com/glue/latest/dg/paypal-connector-limitations.html).
		if res.LastRefreshed != "" {
			refreshed, err := parseSearchTime(res.LastRefreshed)
			if err != nil {
				return fmt.Errorf("paypal: audit: last_refreshed_datetime %q is not a time", res.LastRefreshed)
			}
			if refreshed.Before(to) {
				return fmt.Errorf("paypal: audit: PayPal's transaction search is complete up to %s only, before the end of "+
					"the window [%s, %s); audit the period later", refreshed.UTC().Format(time.RFC3339),
					from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
			}
		}
		if res.TotalPages > searchMaxPages {
			return fmt.Errorf("paypal: audit: PayPal claims %d pages for the window [%s, %s), more than the %d the audit reads",
				res.TotalPages, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), searchMaxPages)
		}
		total = max(total, res.TotalPages)
		for _, d := range res.Details {
			objs, refObject := searchObjects(d.Info)
			for _, o := range objs {
				if !o.Created.IsZero() && (o.Created.Before(from) || !o.Created.Before(to)) {
					continue
				}
				if refObject != "" && d.Info.CustomField == "" {
					if err := l.attribute(ctx, &o, refObject); err != nil {
						return err
					}
				}
				if err := yield(o); err != nil {
					return err
				}
			}
		}
		if len(res.Details) == 0 {
			// An empty page ends the window whatever total_pages said: a
			// listing that asked past its end would loop on empty pages.
			return nil
		}
	}
	return nil
}

// attribute names the operation of o, an object a row yields for another
// transaction (a reversal's or chargeback's payment, a void's
// authorization, a returned refund) when the row carries no custom_field:
// it reads that transaction by id (GET /v2/payments/captures/{id},
// authorizations/{id} or refunds/{id}, paced like the search) and takes
// its custom_id. A chargeback is what an audit most needs to see (money
// taken back after settlement, which no webhook may have told the
// ledger), and nothing says PayPal copies custom_field onto its row. A
// transaction PayPal does not find leaves o unattributed, saying so.
func (l *auditLister) attribute(ctx context.Context, o *payonce.AuditObject, object string) error {
	if err := l.pace(ctx); err != nil {
		return err
	}
	pm, found, err := l.p.getPayment(ctx, l.reads, object, o.Ref)
	switch {
	case err != nil:
		return fmt.Errorf("paypal: audit: reading the %s %s a %s row acts on: %w", object, o.Ref, o.Status, err)
	case !found:
		o.Status += "; its " + object + " " + o.Ref + " is not found"
		return nil
	}
	o.OperationID = operationID(pm.CustomID)
	return nil
}

// ceilSecond rounds t up to the next whole second.
func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}

// get sends one search request, paced, and waits out a 429 that remains
// after the client's retries.
func (l *auditLister) get(ctx context.Context, query url.Values) (searchResponse, error) {
	wait := l.p.auditInterval()
	for try := 0; ; try++ {
		if err := l.pace(ctx); err != nil {
			return searchResponse{}, err
		}
		res, err := l.getOnce(ctx, query)
		var f *adapterkit.Failure
		if !errors.As(err, &f) {
			return res, err
		}
		if f.HTTPStatus != http.StatusTooManyRequests || try == auditRetries {
			return res, l.p.apiError(err)
		}
		wait = min(max(2*wait, time.Millisecond), maxAuditWait)
		if ra := adapterkit.RetryAfter(f.Header.Get("Retry-After"), l.p.now); ra > 0 {
			wait = min(ra, maxAuditWait)
		}
		if err := l.sleep(ctx, wait); err != nil {
			return searchResponse{}, err
		}
	}
}

// pace waits until Config.AuditInterval has passed since the previous
// request (by Config.Now).
func (l *auditLister) pace(ctx context.Context) error {
	now := l.p.now()
	if !l.last.IsZero() {
		if d := l.last.Add(l.p.auditInterval()).Sub(now); d > 0 {
			if err := l.sleep(ctx, d); err != nil {
				return err
			}
			now = l.p.now()
		}
	}
	l.last = now
	return nil
}

// searchPath is the Transaction Search endpoint.
const searchPath = "/v1/reporting/transactions"

// getOnce sends one GET with the access token and decodes its answer. A
// 401 drops the token it used and asks once more with a new one ("a 401
// refreshes once", as Lookup's reads). RESULTSET_TOO_LARGE is errTooLarge;
// a 429 the *adapterkit.Failure (get waits it out); any other failure an
// *APIError, scrubbed (never the token).
func (l *auditLister) getOnce(ctx context.Context, query url.Values) (searchResponse, error) {
	for try := 0; ; try++ {
		t, err := l.token(ctx)
		if err != nil {
			return searchResponse{}, err
		}
		_, header, body, err := adapterkit.Get(ctx, l.hc, l.p.Name(), l.p.baseURL, searchPath, query, func(h http.Header) {
			h.Set("Authorization", "Bearer "+t.value)
			h.Set("Accept", "application/json")
		})
		var f *adapterkit.Failure
		switch {
		case errors.As(err, &f) && f.HTTPStatus == http.StatusUnauthorized && try == 0:
			l.invalidate(t.gen)
			continue
		case errors.As(err, &f) && f.HTTPStatus == http.StatusTooManyRequests:
			return searchResponse{}, err
		case errors.As(err, &f) && f.HTTPStatus != 0:
			if e := decodeError(f.Body); e != nil && e.Name == "RESULTSET_TOO_LARGE" {
				return searchResponse{}, errTooLarge
			}
			return searchResponse{}, l.p.apiError(err)
		case err != nil:
			return searchResponse{}, l.p.apiError(err)
		}
		var res searchResponse
		if err := adapterkit.DecodeJSON(body, &res); err != nil {
			return searchResponse{}, l.p.apiError(adapterkit.Unusable(searchPath, header, err))
		}
		return res, nil
	}
}

// The search's answer: only the fields the audit reads.
type searchResponse struct {
	Details       []searchDetail `json:"transaction_details"`
	TotalPages    int            `json:"total_pages"`
	Page          int            `json:"page"`
	LastRefreshed string         `json:"last_refreshed_datetime"`
}

type searchDetail struct {
	Info searchRow `json:"transaction_info"`
}

// searchRow is transaction_info
// (PayPal-TypeScript-Server-SDK doc/models/transaction-information.md).
type searchRow struct {
	TransactionID  string      `json:"transaction_id"`
	ReferenceID    string      `json:"paypal_reference_id"`
	EventCode      string      `json:"transaction_event_code"`
	InitiationDate string      `json:"transaction_initiation_date"`
	Amount         searchMoney `json:"transaction_amount"`
	Status         string      `json:"transaction_status"`
	CustomField    string      `json:"custom_field"`
	InvoiceID      string      `json:"invoice_id"`
}

type searchMoney struct {
	Currency string `json:"currency_code"`
	Value    string `json:"value"`
}

// Transaction statuses (transaction_status,
// https://developer.paypal.com/docs/api/transaction-search/v1/): D "PayPal
// or merchant rules denied the transaction", F "The original recipient
// partially refunded the transaction", P "The transaction is pending", S
// "The transaction successfully completed without a denial and after any
// pending statuses", V "A successful transaction was reversed and funds
// were refunded to the original sender".
const (
	statusDenied            = "D"
	statusPartiallyRefunded = "F"
	statusPending           = "P"
	statusSuccess           = "S"
	statusReversed          = "V"
)

// Transaction event codes the audit reads
// (https://developer.paypal.com/docs/transaction-search/transaction-event-codes,
// https://developer.paypal.com/docs/reports/reference/tcodes/): T00nn
// "PayPal account-to-PayPal account payment" (T0006 "PayPal Checkout
// APIs"), T1106 "Payment reversal, initiated by PayPal", T1107 "Payment
// refund, initiated by merchant", T1201 "Chargeback", T1202 "Chargeback
// reversal", T1300 "General Authorizations", T1301 "ReAuthorization",
// T1302 "Void of Authorizations".
const (
	codeReversal         = "T1106"
	codeRefund           = "T1107"
	codeChargeback       = "T1201"
	codeChargebackUndone = "T1202"
	codeAuthorization    = "T1300"
	codeReauthorization  = "T1301"
	codeVoid             = "T1302"
)

// searchSkipped reports whether rows of an event code are not objects of
// an operation. An authorization (T1300) is skipped: it is not
// balance-affecting, and where PayPal lists it anyway its capture is a
// row of its own (T0006, another transaction id), so both would count one
// charge twice; the capture is the charge's object. The others are money
// PayPal moves around a payment (fees T01nn, currency
// conversions T02nn, bank and card transfers T03nn-T07nn, bonuses and
// incentives T08nn-T09nn, bill pay T10nn, dividends T14nn, holds T15nn,
// buyer credit T16nn and T18nn, other withdrawals T17nn, corrections
// T19nn, transfers T20nn and T22nn, reserves T21nn, T30nn, T50nn, T97nn,
// T98nn display only, T99nn other), the reversal of a fee (T1108), a hold
// released (T1105), dispute holds (T1110, T1111) and a reauthorization
// (T1301: a new authorization of a charge already listed). An audit
// compares operations, and these are none.
func searchSkipped(code string) bool {
	switch code {
	case "T1105", "T1108", "T1110", "T1111", codeAuthorization, codeReauthorization:
		return true
	}
	if len(code) != 5 || code[0] != 'T' {
		return false
	}
	switch code[1:3] {
	case "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "14", "15", "16", "17", "18", "19",
		"20", "21", "22", "30", "50", "97", "98", "99":
		return true
	}
	return false
}

// searchObjects reads one row: the objects it yields (none for a skipped
// code or a reversal that did not stand), or one unattributed object that
// says why the row could not be read. refObject is the kind of PayPal
// object (objCapture, objAuthorization, objRefund) the yielded object is,
// when it is not the row's own transaction but the one
// paypal_reference_id names.
func searchObjects(r searchRow) (objs []payonce.AuditObject, refObject string) {
	if searchSkipped(r.EventCode) {
		return nil, ""
	}
	o, ok, err := searchObject(r)
	switch {
	case err != nil:
		return []payonce.AuditObject{unreadableRow(r, err)}, ""
	case !ok:
		return nil, ""
	}
	switch {
	case o.Ref == r.TransactionID:
	case r.EventCode == codeVoid:
		refObject = objAuthorization
	case r.EventCode == codeRefund:
		refObject = objRefund
	default:
		refObject = objCapture
	}
	return []payonce.AuditObject{o}, refObject
}

// unreadableRow is a row the adapter cannot read, as an unattributed
// object: counted and listed on request, never guessed into a state.
func unreadableRow(r searchRow, why error) payonce.AuditObject {
	status := "unreadable " + r.EventCode + " " + r.Status + ": " + why.Error()
	if r.CustomField != "" {
		status += "; custom_field " + r.CustomField
	}
	o := payonce.AuditObject{Ref: r.TransactionID, Kind: payonce.KindCharge, Status: status, PaymentRef: r.ReferenceID}
	if r.EventCode == codeRefund {
		o.Kind = payonce.KindRefund
	}
	if t, err := parseSearchTime(r.InitiationDate); err == nil {
		o.Created = t
	}
	return o
}

// searchObject maps a row that is not skipped (see ListObjects). ok is
// false for a row that yields nothing.
func searchObject(r searchRow) (o payonce.AuditObject, ok bool, err error) {
	if r.TransactionID == "" {
		return o, false, errors.New("no transaction_id")
	}
	created, err := parseSearchTime(r.InitiationDate)
	if err != nil {
		return o, false, err
	}
	amount, currency, err := searchAmount(r.Amount)
	if err != nil {
		return o, false, err
	}
	o = payonce.AuditObject{Ref: r.TransactionID, OperationID: operationID(r.CustomField), Status: r.EventCode + " " + r.Status,
		Amount: abs(amount), Currency: currency, Created: created}
	code := r.EventCode
	switch {
	case strings.HasPrefix(code, "T00") && len(code) == 5:
		// A payment received is a credit (positive); a payment the account
		// sent (negative) is none of payonce's, which only receives.
		if amount <= 0 {
			return o, false, fmt.Errorf("a payment with amount %s, not a positive one", r.Amount.Value)
		}
		o.Kind = payonce.KindCharge
		switch r.Status {
		case statusSuccess, statusReversed, statusPartiallyRefunded:
			// V and F: the payment took effect and was refunded or reversed
			// afterwards; what undid it is a row of its own (a refund the
			// ledger holds as a refund operation; a reversal or chargeback,
			// yielded below as this payment reversed). Reading V as reversed
			// here would make every refunded charge differ.
			o.State = payonce.AuditSucceeded
		case statusPending:
			o.State = payonce.AuditProcessing
		case statusDenied:
			o.State = payonce.AuditFailed
		default:
			return o, false, fmt.Errorf("transaction_status %q, which the adapter does not know", r.Status)
		}
		return o, true, nil
	case code == codeRefund && amount > 0:
		// A refund is a debit; a credit under the refund code is the
		// money of the refund paypal_reference_id coming back: that refund,
		// reversed, dated after its own row.
		if r.ReferenceID == "" {
			return o, false, errors.New("a refund credit with no paypal_reference_id naming the refund it returns")
		}
		o.Ref, o.Kind, o.Created = r.ReferenceID, payonce.KindRefund, created.Add(time.Nanosecond)
		switch r.Status {
		case statusSuccess, statusPending, statusReversed:
			o.State = payonce.AuditReversed
			return o, true, nil
		case statusDenied:
			return o, false, nil
		}
		return o, false, fmt.Errorf("transaction_status %q, which the adapter does not know for a refund's return", r.Status)
	case code == codeRefund:
		o.Kind, o.PaymentRef = payonce.KindRefund, r.ReferenceID
		switch r.Status {
		case statusSuccess:
			o.State = payonce.AuditSucceeded
		case statusPending:
			o.State = payonce.AuditProcessing
		case statusDenied:
			o.State = payonce.AuditFailed
		case statusReversed:
			// The refund took effect and its money came back to the account.
			o.State = payonce.AuditReversed
		default:
			return o, false, fmt.Errorf("transaction_status %q, which the adapter does not know for a refund", r.Status)
		}
		return o, true, nil
	case code == codeReversal, code == codeChargeback, code == codeChargebackUndone, code == codeVoid:
		// What became of the payment paypal_reference_id: yielded as that
		// payment again, in its new state, dated after its own row
		// (payonce.AuditLister: an object yielded more than once counts in
		// its latest row).
		if r.ReferenceID == "" {
			return o, false, errors.New("no paypal_reference_id naming the payment it acts on")
		}
		o.Ref, o.Kind, o.Created = r.ReferenceID, payonce.KindCharge, created.Add(time.Nanosecond)
		switch {
		case r.Status == statusDenied || r.Status == statusReversed:
			// The reversal was denied or itself reversed: it does not
			// stand, and the payment's own row (or T1202) says what does.
			return o, false, nil
		case r.Status != statusSuccess && r.Status != statusPending:
			return o, false, fmt.Errorf("transaction_status %q, which the adapter does not know", r.Status)
		case code == codeChargebackUndone:
			o.State = payonce.AuditSucceeded
		case code == codeVoid:
			o.State = payonce.AuditCanceled
		default:
			o.State = payonce.AuditReversed
		}
		return o, true, nil
	}
	return o, false, fmt.Errorf("event code %q, which the adapter does not know", code)
}

// operationID is custom_field when it is a payonce operation id (the
// lower-case form of a UUID version 5, payonce.Identity.OperationID), else
// "": an order created by the service's own front end (an `order:` charge)
// carries whatever custom_id the front end set, which names no operation.
func operationID(custom string) string {
	u, err := uuid.Parse(custom)
	if err != nil || u.Version() != 5 || u.String() != custom {
		return ""
	}
	return custom
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// parseSearchTime reads a search date: RFC 3339, or the form PayPal's
// search writes, with a numeric zone without a colon
// ("2014-07-11T04:03:52+0000").
func parseSearchTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("transaction_initiation_date %q is not a time", s)
}

// searchAmount reads a transaction_amount: a signed decimal string, as
// ISO 4217 minor units of its currency, the unit the ledger counts in,
// with fromPayPal, the parser Classify and Lookup use ("10" HUF, written
// by PayPal without decimals, is 1000; "1500.00" JPY is 1500); any other
// digit beyond the currency's decimals makes the row unreadable. Only the
// sign is the audit's own.
func searchAmount(m searchMoney) (int64, string, error) {
	cur := strings.ToUpper(m.Currency)
	v, neg := strings.CutPrefix(m.Value, "-")
	n, err := fromPayPal(money{CurrencyCode: cur, Value: v})
	if err != nil {
		return 0, "", fmt.Errorf("transaction_amount %q %q: %w", m.Value, m.Currency, err)
	}
	if neg {
		n = -n
	}
	return n, cur, nil
}

package checkout

import "github.com/payonce/payonce"

// The audit of Checkout.com goes ledger → provider, one operation at a
// time, by the adapter's Lookup. Checkout.com lists no payments by date:
// its only list of payments is GET /payments?reference=, "Retrieve a list
// of payments matching a specified reference ... This query parameter is
// required" (https://checkout.com/docs/payments/manage-payments/get-a-list-of-payments),
// a look-up by reference, which Lookup already makes for a charge, and a
// payment's actions are read by its id (GET /payments/{id}/actions). What
// else lists objects by date does not fit an audit of operations:
//
//   - the Reports API (GET /reports?created_after=&created_before=, then a
//     report's CSV files: https://www.checkout.com/docs/reporting/reports-api)
//     serves reports generated on a schedule, refreshed once a day (the
//     Payments Report "is refreshed daily at 08:00:00 UTC":
//     https://www.checkout.com/docs/payments/retrieve-payment-reports/payments-report),
//     after the account manager set them up; a period's payments appear a
//     day later, and reading them needs a report file payonce has no
//     parser for yet;
//   - the financial actions (the Financial Actions by Date Range Report,
//     https://www.checkout.com/docs/funds-management/retrieve-financial-reports/balance-reports/financial-actions-by-date-range-report)
//     hold only what moved the balance (captures, refunds, fees,
//     chargebacks): no authorization, nothing declined or voided.
//
// A look-up by reference sees every payment carrying the operation's
// reference, at once and with the key the adapter already has: it finds a
// payment made twice under one reference (duplicated), a capture declined
// after it was accepted (status differs), an object whose amount is not
// the request's (contradicted), and nothing where the ledger says
// succeeded (missing at provider). What it cannot see is a payment made
// outside payonce under a reference no ledger operation has: the
// provider → ledger direction is not covered.

var _ payonce.Auditor = (*Provider)(nil)

// AuditInfo says the audit checks each ledger operation of the period by
// its reference, with Lookup (ByLookup): Checkout.com lists no payments by
// date, so nothing is listed (ListedKinds nil) and no margin applies.
func (p *Provider) AuditInfo() payonce.AuditInfo {
	return payonce.AuditInfo{ByLookup: true,
		Directions: "ledger → provider: each operation of the period by its reference (GET /payments?reference= and the payment's actions); provider → ledger not covered: Checkout.com lists no payments by date"}
}

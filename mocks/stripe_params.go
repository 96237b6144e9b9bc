package mocks

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/text/currency"

	"github.com/payonce/payonce/mocks/internal/stripewire"
)

// paramSet lists the form parameters an endpoint accepts: exact names and
// prefixes of bracketed families such as "metadata[".
type paramSet struct {
	names    []string
	prefixes []string
}

func (p paramSet) allows(name string) bool {
	for _, n := range p.names {
		if n == name {
			return true
		}
	}
	for _, pre := range p.prefixes {
		if strings.HasPrefix(name, pre) {
			return true
		}
	}
	return false
}

// checkParams refuses unknown parameters as Stripe does (parameter_unknown).
func (s *StripeHandler) checkParams(c *call, v url.Values, allowed paramSet) *response {
	for name := range v {
		if !allowed.allows(name) {
			return s.invalid(c, "parameter_unknown", name,
				fmt.Sprintf("Received unknown parameter: %s", name))
		}
	}
	return nil
}

// intParam parses an optional integer parameter within [lo, hi]; present
// reports whether it was given.
func (s *StripeHandler) intParam(c *call, v url.Values, name string, lo, hi int64) (n int64, present bool, resp *response) {
	raw, ok := v[name]
	if !ok {
		return 0, false, nil
	}
	val := ""
	if len(raw) > 0 {
		val = raw[len(raw)-1]
	}
	n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
	if err != nil {
		return 0, true, s.invalid(c, "parameter_invalid_integer", name, fmt.Sprintf("Invalid integer: %s", val))
	}
	if n < lo {
		return 0, true, s.invalid(c, "parameter_invalid_integer", name,
			fmt.Sprintf("This value must be greater than or equal to %d.", lo))
	}
	if n > hi {
		return 0, true, s.invalid(c, "parameter_invalid_integer", name,
			fmt.Sprintf("This value must be less than or equal to %d.", hi))
	}
	return n, true, nil
}

func (s *StripeHandler) boolParam(c *call, v url.Values, name string) (bool, *response) {
	switch val := v.Get(name); val {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, s.invalid(c, "", name, fmt.Sprintf("Invalid boolean: %s", val))
	}
}

func (s *StripeHandler) enumParam(c *call, v url.Values, name string, allowed ...string) (string, *response) {
	val := v.Get(name)
	if val == "" {
		return "", nil
	}
	for _, a := range allowed {
		if val == a {
			return val, nil
		}
	}
	return "", s.invalid(c, "", name, fmt.Sprintf("Invalid %s: must be one of %s", name, strings.Join(allowed, ", ")))
}

// currencyParam validates a required ISO 4217 code and returns it in
// lower case, as Stripe renders currencies.
func (s *StripeHandler) currencyParam(c *call, v url.Values) (string, *response) {
	val := v.Get("currency")
	if val == "" {
		return "", s.invalid(c, "parameter_missing", "currency", "Missing required param: currency.")
	}
	if len(val) != 3 {
		return "", s.invalid(c, "", "currency", fmt.Sprintf("Invalid currency: %s. Stripe currently supports these currencies: usd, eur, gbp, ...", strings.ToLower(val)))
	}
	if _, err := currency.ParseISO(strings.ToUpper(val)); err != nil {
		return "", s.invalid(c, "", "currency", fmt.Sprintf("Invalid currency: %s. Stripe currently supports these currencies: usd, eur, gbp, ...", strings.ToLower(val)))
	}
	return strings.ToLower(val), nil
}

// metadataParam collects metadata[k]=v under Stripe's limits: at most 50
// keys, keys up to 40 characters without brackets, values up to 500.
func (s *StripeHandler) metadataParam(c *call, v url.Values) (map[string]string, *response) {
	md := map[string]string{}
	for name, vals := range v {
		if !strings.HasPrefix(name, "metadata[") {
			continue
		}
		if !strings.HasSuffix(name, "]") || len(name) < len("metadata[]")+1 {
			return nil, s.invalid(c, "", name, fmt.Sprintf("Invalid metadata parameter: %s", name))
		}
		k := name[len("metadata[") : len(name)-1]
		if strings.ContainsAny(k, "[]") {
			return nil, s.invalid(c, "", name, "Metadata keys can't contain square brackets.")
		}
		if len(k) > 40 {
			return nil, s.invalid(c, "", name, fmt.Sprintf("Metadata keys can have up to 40 characters, but you passed in a key that is %d characters.", len(k)))
		}
		val := vals[len(vals)-1]
		if len(val) > 500 {
			return nil, s.invalid(c, "", name, fmt.Sprintf("Metadata values can have up to 500 characters, but you passed in a value that is %d characters.", len(val)))
		}
		md[k] = val
	}
	if len(md) > 50 {
		return nil, s.invalid(c, "", "metadata", "You can specify up to 50 keys in metadata.")
	}
	return md, nil
}

// listPage is one page request: limit (1..100, default 10), starting_after
// and ending_before.
type listPage struct {
	limit         int
	startingAfter string
	endingBefore  string
}

// listPageParams reads a list endpoint's paging parameters.
func (s *StripeHandler) listPageParams(c *call, v url.Values) (listPage, *response) {
	p := listPage{limit: 10, startingAfter: v.Get("starting_after"), endingBefore: v.Get("ending_before")}
	n, ok, r := s.intParam(c, v, "limit", 1, 100)
	if r != nil {
		return p, r
	}
	if ok {
		p.limit = int(n)
	}
	if p.startingAfter != "" && p.endingBefore != "" {
		return p, s.invalid(c, "parameters_exclusive", "ending_before",
			"You may only specify one of these parameters: ending_before, starting_after.")
	}
	return p, nil
}

// createdFilter is Stripe's created / created[gt|gte|lt|lte] filter.
type createdFilter struct {
	set                  bool
	eq, gt, gte, lt, lte *int64
}

func (s *StripeHandler) createdParams(c *call, v url.Values) (createdFilter, *response) {
	var f createdFilter
	for _, op := range []string{"", "gt", "gte", "lt", "lte"} {
		name := "created"
		if op != "" {
			name = "created[" + op + "]"
		}
		n, ok, r := s.intParam(c, v, name, 0, 1<<62)
		if r != nil {
			return f, r
		}
		if !ok {
			continue
		}
		f.set = true
		switch op {
		case "":
			f.eq = &n
		case "gt":
			f.gt = &n
		case "gte":
			f.gte = &n
		case "lt":
			f.lt = &n
		case "lte":
			f.lte = &n
		}
	}
	return f, nil
}

func (f createdFilter) matches(t int64) bool {
	return (f.eq == nil || t == *f.eq) && (f.gt == nil || t > *f.gt) && (f.gte == nil || t >= *f.gte) &&
		(f.lt == nil || t < *f.lt) && (f.lte == nil || t <= *f.lte)
}

// listParams reads the query of a list endpoint that also filters by the
// parameters named in filters: paging and created filters.
func (s *StripeHandler) listParams(c *call, filters ...string) (listPage, createdFilter, *response) {
	allowed := listFilterParams
	allowed.names = append(append([]string(nil), allowed.names...), filters...)
	if r := s.checkParams(c, c.query, allowed); r != nil {
		return listPage{}, createdFilter{}, r
	}
	p, r := s.listPageParams(c, c.query)
	if r != nil {
		return listPage{}, createdFilter{}, r
	}
	created, r := s.createdParams(c, c.query)
	return p, created, r
}

// stripeList is the page p asks for of all (newest first), in Stripe's list
// envelope for url, rendered by object. A starting_after or ending_before
// cursor must name an object of the list's type (every stored one, not
// only those the filters keep): Stripe pages by the cursor object's place
// in the newest-first order ("starting_after is an object ID that defines
// your place in the list", https://docs.stripe.com/api/pagination). known
// looks the cursor up; unknown answers Stripe's error for an id it does
// not know.
func stripeList[R ordered, T any](url string, all []R, p listPage, id func(R) string, object func(R) T,
	known func(id string) (R, bool), unknown func(param, id string) *response) (stripewire.List[T], *response) {
	var items []R
	var more bool
	switch {
	case p.startingAfter != "":
		cur, ok := known(p.startingAfter)
		if !ok {
			return stripewire.List[T]{}, unknown("starting_after", p.startingAfter)
		}
		items, more = afterCursor(all, cur, p.limit)
	case p.endingBefore != "":
		cur, ok := known(p.endingBefore)
		if !ok {
			return stripewire.List[T]{}, unknown("ending_before", p.endingBefore)
		}
		items, more = beforeCursor(all, cur, p.limit)
	default:
		items, more = all[:min(p.limit, len(all))], len(all) > p.limit
	}
	out := stripewire.List[T]{Object: "list", URL: url, HasMore: more, Data: make([]T, 0, len(items))}
	for _, it := range items {
		out.Data = append(out.Data, object(it))
	}
	return out, nil
}

// newer reports whether a comes before b in a newest-first list.
func newer[R ordered](a, b R) bool {
	ca, sa := a.order()
	cb, sb := b.order()
	return ca > cb || ca == cb && sa > sb
}

// afterCursor is the page of up to limit items of all (newest first) that
// come after cur, and whether more follow.
func afterCursor[R ordered](all []R, cur R, limit int) ([]R, bool) {
	start := len(all)
	for i, it := range all {
		if newer(cur, it) {
			start = i
			break
		}
	}
	rest := all[start:]
	return rest[:min(limit, len(rest))], len(rest) > limit
}

// beforeCursor is the page of up to limit items of all (newest first) that
// come before cur, the ones nearest cur, and whether more precede them.
func beforeCursor[R ordered](all []R, cur R, limit int) ([]R, bool) {
	end := 0
	for end < len(all) && newer(all[end], cur) {
		end++
	}
	start := max(0, end-limit)
	return all[start:end], start > 0
}

var listFilterParams = paramSet{
	names: []string{"limit", "starting_after", "ending_before", "created", "created[gt]", "created[gte]",
		"created[lt]", "created[lte]", "expand[]"},
	prefixes: []string{"expand["},
}

// stripeTestCard is the behaviour of one of Stripe's test PaymentMethods.
type stripeTestCard struct {
	requiresAction bool
	code           string // error code of a decline, "" if the card works
	declineCode    string
	message        string
}

// lookupTestCard maps Stripe's documented test PaymentMethods (pm_card_...)
// to their behaviour.
func lookupTestCard(pm string) (stripeTestCard, bool) {
	card, ok := stripeTestCards[pm]
	return card, ok
}

// stripeTestCards are Stripe's documented test PaymentMethods: the cards
// that work, the ones that need authentication a server-side charge cannot
// give, and the declines.
var stripeTestCards = func() map[string]stripeTestCard {
	declined := func(decline, msg string) stripeTestCard {
		return stripeTestCard{code: "card_declined", declineCode: decline, message: msg}
	}
	// own is a decline with its own error code, the same as its decline code.
	own := func(code, msg string) stripeTestCard {
		return stripeTestCard{code: code, declineCode: code, message: msg}
	}
	cards := map[string]stripeTestCard{
		"pm_card_chargeDeclined":                      declined("generic_decline", "Your card was declined."),
		"pm_card_chargeDeclinedInsufficientFunds":     declined("insufficient_funds", "Your card has insufficient funds."),
		"pm_card_chargeDeclinedLostCard":              declined("lost_card", "Your card was declined."),
		"pm_card_chargeDeclinedStolenCard":            declined("stolen_card", "Your card was declined."),
		"pm_card_chargeDeclinedFraudulent":            declined("fraudulent", "Your card was declined."),
		"pm_card_chargeDeclinedVelocityLimitExceeded": declined("card_velocity_exceeded", "Your card was declined."),
		"pm_card_chargeDeclinedExpiredCard":           own("expired_card", "Your card has expired."),
		"pm_card_chargeDeclinedIncorrectCvc":          own("incorrect_cvc", "Your card's security code is incorrect."),
		"pm_card_chargeDeclinedProcessingError": own("processing_error",
			"An error occurred while processing your card. Try again in a little bit."),
	}
	for _, pm := range []string{"pm_card_visa", "pm_card_visa_debit", "pm_card_mastercard", "pm_card_mastercard_debit",
		"pm_card_mastercard_prepaid", "pm_card_amex", "pm_card_discover", "pm_card_diners",
		"pm_card_jcb", "pm_card_unionpay", "pm_card_bypassPending", "pm_card_us"} {
		cards[pm] = stripeTestCard{}
	}
	for _, pm := range []string{"pm_card_authenticationRequired", "pm_card_threeDSecure2Required", "pm_card_threeDSecureRequired"} {
		cards[pm] = stripeTestCard{requiresAction: true}
	}
	return cards
}()

// formatMoney renders minor units the way Stripe's messages do: "$5.00" for
// usd, "5.00 eur" otherwise (zero-decimal currencies without decimals).
func formatMoney(amount int64, cur string) string {
	switch cur {
	case "bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv", "xaf", "xof", "xpf":
		return fmt.Sprintf("%d %s", amount, cur)
	case "usd":
		return fmt.Sprintf("$%d.%02d", amount/100, amount%100)
	}
	return fmt.Sprintf("%d.%02d %s", amount/100, amount%100, cur)
}

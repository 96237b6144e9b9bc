package yookassa

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/text/currency"
)

// YooKassa writes money as a decimal string with the currency's minor-unit
// digits ({"value": "1200.00", "currency": "RUB"}); payonce counts integer
// minor units. The number of digits comes from golang.org/x/text/currency
// (ISO 4217's standard rounding), never from a table kept here.

// scaleOf returns the minor-unit digits of an ISO 4217 code in upper case.
func scaleOf(code string) (int, error) {
	u, err := currency.ParseISO(code)
	if err != nil || u.String() != code {
		return 0, fmt.Errorf("%q is not an ISO 4217 currency code in upper case", code)
	}
	scale, _ := currency.Standard.Rounding(u)
	return scale, nil
}

// formatAmount renders minor units of code as YooKassa's amount object.
func formatAmount(minor int64, code string) (amount, error) {
	if minor <= 0 {
		return amount{}, fmt.Errorf("amount %d is not positive", minor)
	}
	scale, err := scaleOf(code)
	if err != nil {
		return amount{}, err
	}
	s := strconv.FormatInt(minor, 10)
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	return amount{Value: s, Currency: code}, nil
}

// parseAmount reads YooKassa's amount object as minor units. It accepts
// fewer decimal digits than the currency has ("10.5" RUB is 1050) and
// refuses more.
func parseAmount(a amount) (int64, error) {
	scale, err := scaleOf(a.Currency)
	if err != nil {
		return 0, err
	}
	intPart, frac, hasDot := strings.Cut(a.Value, ".")
	if intPart == "" || strings.Trim(intPart, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" || (hasDot && frac == "") {
		return 0, fmt.Errorf("amount %q is not a decimal number", a.Value)
	}
	if len(frac) > scale {
		return 0, fmt.Errorf("amount %q has more than %d decimal digits for %s", a.Value, scale, a.Currency)
	}
	n, err := strconv.ParseInt(intPart+frac+strings.Repeat("0", scale-len(frac)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("amount %q is out of range", a.Value)
	}
	return n, nil
}

package yookassa

// FormatAmount and ParseAmount expose the money conversion to the tests.
func FormatAmount(minor int64, code string) (value, cur string, err error) {
	a, err := formatAmount(minor, code)
	return a.Value, a.Currency, err
}

func ParseAmount(value, code string) (int64, error) {
	return parseAmount(amount{Value: value, Currency: code})
}

package yookassa_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/providers/yookassa"
)

func TestAmounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		minor int64
		cur   string
		value string
	}{
		{minor: 120000, cur: "RUB", value: "1200.00"},
		{minor: 1, cur: "RUB", value: "0.01"},
		{minor: 99, cur: "USD", value: "0.99"},
		{minor: 100, cur: "EUR", value: "1.00"},
		{minor: 1500, cur: "JPY", value: "1500"}, // no minor unit
		{minor: 1, cur: "KRW", value: "1"},
		{minor: 1234, cur: "KWD", value: "1.234"}, // three digits
		{minor: 5, cur: "BHD", value: "0.005"},
		{minor: 123456789012, cur: "RUB", value: "1234567890.12"},
	} {
		v, c, err := yookassa.FormatAmount(tc.minor, tc.cur)
		require.NoError(t, err, tc.cur)
		require.Equal(t, tc.value, v, tc.cur)
		require.Equal(t, tc.cur, c)
		back, err := yookassa.ParseAmount(v, tc.cur)
		require.NoError(t, err)
		require.Equal(t, tc.minor, back, "round trip %s %s", tc.value, tc.cur)
	}
	for _, bad := range []struct {
		minor int64
		cur   string
	}{{minor: 0, cur: "RUB"}, {minor: -1, cur: "RUB"}, {minor: 1, cur: "rub"}, {minor: 1, cur: "XYZ"}, {minor: 1}} {
		_, _, err := yookassa.FormatAmount(bad.minor, bad.cur)
		require.Error(t, err, "%d %s", bad.minor, bad.cur)
	}

	n, err := yookassa.ParseAmount("10.5", "RUB")
	require.NoError(t, err)
	require.Equal(t, int64(1050), n, "fewer digits than the currency has")
	n, err = yookassa.ParseAmount("7", "RUB")
	require.NoError(t, err)
	require.Equal(t, int64(700), n)
	for _, bad := range []string{"1.001", "1,00", "", ".5", "1.", "-1.00", "1e3", "99999999999999999999"} {
		_, err := yookassa.ParseAmount(bad, "RUB")
		require.Error(t, err, bad)
	}
	_, err = yookassa.ParseAmount("1.5", "JPY")
	require.Error(t, err)
}

package paypal

import "testing"

// The signed text's CRC32 is the IEEE CRC of the raw body as an unsigned
// decimal, as Java's CRC32.getValue() (a long) prints it: the check value
// of "123456789" has its high bit set, so a signed 32-bit form would be
// negative.
func TestSignedTextCRC32IsUnsignedDecimal(t *testing.T) {
	got := string(signedText(transmission{id: "69cd13f0-d67a-11e5-baa3-778b53f4ae55", timeText: "2016-02-18T20:01:35Z"}, "1JE4291016473214C", []byte("123456789")))
	if want := "69cd13f0-d67a-11e5-baa3-778b53f4ae55|2016-02-18T20:01:35Z|1JE4291016473214C|3421780262"; got != want {
		t.Fatalf("signed text %q, want %q", got, want)
	}
}

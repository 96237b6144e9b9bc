package paypal

import (
	"strings"
	"testing"
)

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

// FuzzCertFileAndURL: parsing a certificate file and a PAYPAL-CERT-URL
// never panics; a URL is never allowed on a host that is not listed, nor
// over http on a host that is not loopback.
func FuzzCertFileAndURL(f *testing.F) {
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), "https://api.paypal.com/v1/notifications/certs/CERT-1")
	f.Add([]byte{0x30, 0x82, 0x01, 0x0a}, "http://127.0.0.1:8080/v1/notifications/certs/CERT-1")
	f.Add([]byte(""), "https://user@api.paypal.com/x")
	f.Add([]byte("x"), "https://api.paypal.com.evil.example/x")
	f.Add([]byte("x"), "http://api.paypal.com/x")
	f.Add([]byte("x"), "https://API.PAYPAL.COM:443/x")
	hosts := []string{"api.paypal.com", "127.0.0.1:8080"}
	f.Fuzz(func(t *testing.T, file []byte, raw string) {
		if c, err := parseCertFile(file); err == nil {
			_ = leafSubjectOK(c.leaf)
		}
		u, err := checkCertURL(raw, hosts)
		if err != nil {
			return
		}
		host := strings.ToLower(u.Host)
		if host != "api.paypal.com" && host != "127.0.0.1:8080" && !(u.Port() == "" && strings.ToLower(u.Hostname()) == "api.paypal.com") {
			t.Fatalf("%q allowed on host %q", raw, u.Host)
		}
		if u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())) {
			t.Fatalf("%q allowed over %s", raw, u.Scheme)
		}
	})
}
